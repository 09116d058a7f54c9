import fs from 'node:fs';
import path from 'node:path';
import {
  appBundle,
  bytesOf,
  PserverDriver,
  spawnNode,
  spawnProcess,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
  waitFor,
  type ManagedProcess,
} from '@pserver/testing';

afterAll(stopAllProcesses);

const uid = process.geteuid!();
const asRoot = uid === 0;

/** Every directory and file under `dir` (itself included), with its permission bits. */
function modes(dir: string): { path: string; dir: boolean; mode: number }[] {
  const stats = fs.statSync(dir);
  const entries = [{ path: dir, dir: true, mode: stats.mode & 0o7777 }];
  for (const name of fs.readdirSync(dir)) {
    const child = path.join(dir, name);
    if (fs.statSync(child).isDirectory()) entries.push(...modes(child));
    else entries.push({ path: child, dir: false, mode: fs.statSync(child).mode & 0o7777 });
  }
  return entries;
}

/** Starts a pserver that exits on its own; resolves with how and the fatal line it wrote. */
async function refusal(checkpointDir: string, extra: string[] = []) {
  const child = spawnNode(
    appBundle('pserver'),
    ['--port', '0', '--log-format', 'json', '--checkpoint-dir', checkpointDir, ...extra],
    { name: 'pserver-refused' },
  );
  const exited = await child.exited;
  const fatal = child.jsonLines().filter((e) => e.level === 'fatal');
  return { exited, fatal: fatal.map((e) => String(e.msg)) };
}

describe('checkpoint files and directories', () => {
  it('are owner-only (files 0600, directories 0700) even under umask 000', async () => {
    const checkpointDir = path.join(tempDir('ckpt-modes'), 'not-yet-there');
    // The pserver stops itself (SIGSTOP) with its checkpoint written and not yet renamed: the
    // temporary file can be looked at.
    const child = spawnProcess(
      'sh',
      [
        '-c',
        'umask 000; exec "$0" "$@"',
        process.execPath,
        appBundle('pserver'),
        ...['--port', '0', '--log-format', 'json', '--exit-on-stdin-close'],
        ...['--checkpoint-dir', checkpointDir],
      ],
      {
        name: 'pserver-umask',
        env: { PSERVER_FAILPOINT: 'after-fsync-before-rename:stop' },
        stdinPipe: true,
      },
    );
    let driver: PserverDriver | undefined;
    try {
      const listening = await child.waitForLog((e) => e.msg === 'listening', {
        timeoutMs: 20_000,
      });
      // `exec` kept the pid: the pserver itself runs with umask 000.
      expect(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8')).toMatch(/^Umask:\s+0000$/m);
      driver = new PserverDriver(String(listening.address));
      const context = { trainerId: 1, shardEpoch: await driver.epoch() };
      await driver.initParam(
        context,
        {
          name: 'w',
          elementType: 'ELEMENT_TYPE_FLOAT32',
          content: bytesOf(new Float32Array([1, 2, 3])),
        },
        { sgd: {}, learningRate: { base: 1 } },
      );
      const finished = driver.finishInitParams(context);
      await child.waitForLog((e) => e.msg === 'failpoint: stopping the process', {
        timeoutMs: 20_000,
      });
      // The line is written just before the SIGSTOP: a SIGCONT sent before it would be lost.
      await waitFor(() => processState(child.pid) === 'T', {
        timeoutMs: 20_000,
        description: 'the pserver stopped at its failpoint',
      });
      const paused = modes(checkpointDir);
      expect(paused.filter((e) => e.path.endsWith('.ckpt.tmp'))).toHaveLength(1);
      child.signal('SIGCONT');
      await finished;
      expect(await stop(child)).toEqual({ code: 0, signal: null });

      const written = modes(checkpointDir);
      expect(written.map((e) => path.relative(checkpointDir, e.path)).sort()).toEqual([
        '',
        'shard-0',
        expect.stringMatching(/^shard-0\/e1-s1-[\w-]+\.ckpt$/),
        'shard-0/manifest.json',
      ]);
      for (const entry of [...paused, ...written])
        expect(entry).toEqual({ ...entry, mode: entry.dir ? 0o700 : 0o600 });
    } finally {
      driver?.close();
      await stop(child);
    }
  });
});

describe('the checkpoint directory at start', () => {
  const cases: [string, (dir: string) => { where: string; fix: string }][] = [
    [
      'that is world-writable',
      (dir) => {
        fs.chmodSync(dir, 0o777);
        return { where: dir, fix: `chmod 700 ${dir}` };
      },
    ],
    [
      asRoot ? 'owned by another uid' : 'owned by another uid (root)',
      (dir) => {
        // Not root, the test cannot give a directory away: /, owned by root, stands in.
        if (!asRoot) return { where: '/', fix: `chown ${uid} /` };
        fs.chownSync(dir, 65534, 65534);
        return { where: dir, fix: `chown ${uid} ${dir}` };
      },
    ],
    [
      'whose shard directory is world-writable',
      (dir) => {
        fs.mkdirSync(path.join(dir, 'shard-0'));
        fs.chmodSync(path.join(dir, 'shard-0'), 0o777);
        return { where: path.join(dir, 'shard-0'), fix: `chmod 700 ${path.join(dir, 'shard-0')}` };
      },
    ],
  ];

  it.each(cases)(
    'refuses to start on a directory %s: exit 5, one line naming it, its owner and mode, the uid and the fix',
    async (_what, prepare) => {
      const dir = tempDir('ckpt-unsafe');
      const { where, fix } = prepare(dir);
      const before = fs.readdirSync(where);
      const { exited, fatal } = await refusal(where === '/' ? '/' : dir);
      expect(exited).toEqual({ code: 5, signal: null });
      const stats = fs.statSync(where);
      expect(fatal).toEqual([
        expect.stringMatching(
          new RegExp(
            `^checkpoint directory ${escape(where)} .*\\(owner uid ${stats.uid}, mode ` +
              `${(stats.mode & 0o7777).toString(8).padStart(4, '0')}; this process runs as uid ${uid}\\)` +
              `.*Fix it with: ${escape(fix)}$`,
          ),
        ),
      ]);
      // Nothing was recovered or written.
      expect(fs.readdirSync(where)).toEqual(before);
    },
  );

  it('refuses before registering in cluster mode (etcd is never reached)', async () => {
    const dir = tempDir('ckpt-unsafe-cluster');
    fs.chmodSync(dir, 0o777);
    const { exited, fatal } = await refusal(dir, ['--etcd-endpoints', 'http://127.0.0.1:9']);
    expect(exited).toEqual({ code: 5, signal: null });
    expect(fatal).toEqual([expect.stringContaining(`checkpoint directory ${dir} is writable`)]);
  });

  it('starts on a directory the group can read, with a warning', async () => {
    const dir = tempDir('ckpt-readable');
    fs.chmodSync(dir, 0o750);
    const pserver = await startPserverProcess([], { checkpointDir: dir, name: 'pserver-0750' });
    try {
      expect(directoryWarnings(pserver.process)).toEqual([
        `checkpoint directory ${dir} (owner uid ${uid}, mode 0750) is readable by group: ` +
          `the checkpoint files are 0600, but their names and sizes are visible; ` +
          `chmod 700 ${dir} makes it private`,
      ]);
      // It serves: the manifest was written.
      expect(fs.existsSync(path.join(dir, 'shard-0', 'manifest.json'))).toBe(true);
    } finally {
      await pserver.process.stop();
    }
  });

  it('creates a missing directory 0700 and starts without a warning', async () => {
    const dir = path.join(tempDir('ckpt-missing'), 'a', 'b');
    const pserver = await startPserverProcess([], { checkpointDir: dir, name: 'pserver-new-dir' });
    try {
      expect(fs.statSync(dir).mode & 0o7777).toBe(0o700);
      expect(directoryWarnings(pserver.process)).toEqual([]);
    } finally {
      await pserver.process.stop();
    }
  });
});

/** The state letter of /proc/<pid>/stat: R, S, T (stopped), … */
function processState(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

function directoryWarnings(child: ManagedProcess): unknown[] {
  return child
    .jsonLines()
    .filter((e) => e.level === 'warn' && String(e.msg).startsWith('checkpoint directory'))
    .map((e) => e.msg);
}

function stop(child: ManagedProcess) {
  return child.stop({ graceMs: 10_000 });
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
