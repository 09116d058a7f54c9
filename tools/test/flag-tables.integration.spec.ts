import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { workspaceRoot } from '@pserver/testing';

// The flag table of each app's README against the built program's `--help`: every flag in one is
// in the other, with the same environment variable and the same default where `--help` shows
// one. A flag added to a config.ts without its README row fails here.

interface Flag {
  /** `--lease-ttl-s` */
  flag: string;
  env: string[];
  /** The default `--help` shows, as the README writes it (`600`, `127.0.0.1`, `a,b`). */
  default: string | undefined;
}

/** The options `--help` lists, with commander's `(default: …, env: …)` note read back. */
function helpFlags(bundle: string): Flag[] {
  if (!fs.existsSync(bundle)) throw new Error(`${bundle} is missing: build the app first`);
  const help = execFileSync(process.execPath, [bundle, '--help'], {
    encoding: 'utf8',
    env: { ...process.env, COLUMNS: '80' },
  });
  const options = help.slice(help.indexOf('\nOptions:\n') + '\nOptions:\n'.length);
  // An option starts a line with two spaces and a dash; wrapped text continues indented further.
  const entries = options
    .split(/\n(?= {2}-)/)
    .map((entry) => entry.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
  return (
    entries
      .map((entry) => {
        const flag = /--[a-z0-9-]+/.exec(entry)![0];
        // Commander's note is the last parenthesis; a description may hold one of its own.
        const note = /\(([^()]*)\)$/.exec(entry)?.[1] ?? '';
        const env = /(?:^|, )env: (\S+)$/.exec(note)?.[1];
        const shown = /(?:^|, )default: (.*?)(?:, env: \S+)?$/.exec(note)?.[1];
        const value: unknown = shown === undefined ? undefined : JSON.parse(shown);
        return {
          flag,
          env: env ? [env] : [],
          default: value === undefined ? undefined : [value].flat().map(String).join(','),
        };
      })
      // --help and --version describe the program, not its configuration: no row of the table.
      .filter((f) => f.flag !== '--help' && f.flag !== '--version')
  );
}

/** The rows of a README's table whose first column is `flag`, one entry per flag of a row. */
function readmeFlags(readme: string): { flags: Flag[]; rowsWithSeveral: Flag[][] } {
  const lines = fs.readFileSync(readme, 'utf8').split('\n');
  const start = lines.findIndex((line) => /^\|\s*flag\s*\|/.test(line));
  if (start < 0) throw new Error(`${readme} has no table with a 'flag' column`);
  const header = cells(lines[start]!);
  const column = (name: string): number => {
    const k = header.indexOf(name);
    if (k < 0) throw new Error(`${readme}: the flag table has no '${name}' column`);
    return k;
  };
  const rows = [];
  for (let i = start + 2; i < lines.length && lines[i]!.startsWith('|'); i++) {
    const row = cells(lines[i]!);
    const code = (k: number): string[] =>
      [...(row[k] ?? '').matchAll(/`([^`]*)`/g)].map((m) => m[1]!);
    const flags = code(column('flag'));
    const defaults = code(column('default'));
    const env = code(column('environment'));
    rows.push(
      flags.map((flag, k) => ({
        flag,
        // `--tls-cert`, `--tls-key` | `X_TLS_CERT`, `X_TLS_KEY`: paired in order.
        env: env.length === flags.length ? [env[k]!] : env,
        default: defaults.length === 1 ? defaults[0] : undefined,
      })),
    );
  }
  return { flags: rows.flat(), rowsWithSeveral: rows.filter((row) => row.length > 1) };
}

const cells = (line: string): string[] =>
  line
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((cell) => cell.trim());

describe.each(['pserver', 'master'])('the flag table of apps/%s/README.md', (app) => {
  const root = workspaceRoot();
  const bundle = path.join(root, 'dist', 'apps', app, 'main.js');
  const help = helpFlags(bundle);
  const readme = readmeFlags(path.join(root, 'apps', app, 'README.md'));
  const byFlag = new Map(readme.flags.map((f) => [f.flag, f]));

  it('lists every flag of --help and no other', () => {
    expect(help.length).toBeGreaterThan(10);
    expect(readme.flags.map((f) => f.flag).sort()).toEqual(help.map((f) => f.flag).sort());
  });

  it('names the environment variable of each flag', () => {
    for (const { flag, env } of help)
      expect({ flag, env: byFlag.get(flag)?.env }).toEqual({
        flag,
        env: expect.arrayContaining(env) as unknown,
      });
  });

  it('gives the default --help shows, in a row of its own', () => {
    for (const { flag, default: shown } of help.filter((f) => f.default !== undefined)) {
      expect({ flag, default: byFlag.get(flag)?.default }).toEqual({ flag, default: shown });
      expect(readme.rowsWithSeveral.flat().map((f) => f.flag)).not.toContain(flag);
    }
  });
});
