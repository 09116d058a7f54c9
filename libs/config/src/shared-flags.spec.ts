import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { flagName, flagOption, type Flag } from './flag-table';
import { sharedFlags } from './shared-flags';

// The vectors each app's config.spec.ts reads through its own loadConfig: a shared flag must give
// the same config value in the pserver and in the master.
const { cases } = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', 'testdata', 'shared-flags.json'), 'utf8'),
) as { cases: { args: string[]; config: Record<string, unknown> }[] };

/** The shared flags alone, each given a help line as an app's table does. */
const flags: Flag[] = Object.values(sharedFlags).map((flag) => ({ help: '', ...flag }) as Flag);

describe('the shared flags and their vectors (testdata/shared-flags.json)', () => {
  it('has a vector for every shared flag', () => {
    const named = new Set(cases.flatMap((c) => c.args.filter((arg) => arg.startsWith('--'))));
    expect(flags.map(flagName).filter((name) => !named.has(name))).toEqual([]);
  });

  it('writes vectors the shared flags accept', () => {
    for (const { args } of cases) {
      const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined });
      for (const flag of flags) program.addOption(flagOption(flag, 'SHARED'));
      expect(() => program.parse(args, { from: 'user' })).not.toThrow();
    }
  });
});
