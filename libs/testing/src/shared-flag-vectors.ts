import fs from 'node:fs';
import path from 'node:path';
import { workspaceRoot } from '@pserver/local-cluster';

/** A vector of `libs/config/testdata/shared-flags.json`, as one app reads it. */
export interface SharedFlagVector {
  /** `['--lease-ttl-s', '7']` */
  args: string[];
  /** The same as the app's variables: `{ PSERVER_LEASE_TTL_S: '7' }`; a switch's is `1`. */
  env: Record<string, string>;
  /** The fields of the app's config these give. */
  config: Record<string, unknown>;
}

/**
 * The vectors of the flags the pserver and the master share (`sharedFlags` of `@pserver/config`),
 * with the variables of the app whose prefix is given: each app's `config.spec.ts` checks its
 * `loadConfig` against the same ones.
 */
export function sharedFlagVectors(envPrefix: string): SharedFlagVector[] {
  const file = path.join(workspaceRoot(), 'libs', 'config', 'testdata', 'shared-flags.json');
  const { cases } = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    cases: { args: string[]; config: Record<string, unknown> }[];
  };
  return cases.map(({ args, config }) => ({ args, env: asVariables(envPrefix, args), config }));
}

/** `--lease-ttl-s 7 --exit-on-stdin-close` as `<PREFIX>_LEASE_TTL_S=7 <PREFIX>_EXIT_ON_STDIN_CLOSE=1`. */
function asVariables(envPrefix: string, args: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const name = `${envPrefix}_${args[i]!.slice(2).toUpperCase().replaceAll('-', '_')}`;
    const value = args[i + 1];
    if (value === undefined || value.startsWith('--')) env[name] = '1';
    else env[name] = args[++i]!;
  }
  return env;
}
