import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  checkCheckpointDirectories,
  judgeCheckpointDirectory,
  type DirectoryStats,
  type ProcessIdentity,
} from './directory-check';

const directory = 0o040000;
const regularFile = 0o100000;

function stats(uid: number, gid: number, mode: number, type = directory): DirectoryStats {
  return { uid, gid, mode: type | mode, isDirectory: () => type === directory };
}

// A pserver running as uid 1000 with primary group 1000 and a supplementary group 2000.
const pserver: ProcessIdentity = { uid: 1000, groups: [1000, 2000] };
const judge = (s: DirectoryStats, dir = '/ckpt') => judgeCheckpointDirectory(dir, s, pserver);

describe('judgeCheckpointDirectory', () => {
  it('accepts a private directory of its own, without a warning', () => {
    expect(judge(stats(1000, 1000, 0o700))).toEqual({ ok: true });
    // mkdir in a setgid directory inherits the bit.
    expect(judge(stats(1000, 1000, 0o2700))).toEqual({ ok: true });
  });

  it('accepts a directory readable by group or others, with a warning naming who and the fix', () => {
    const verdict = judge(stats(1000, 1000, 0o750));
    expect(verdict).toEqual({ ok: true, warning: expect.stringContaining('readable by group:') });
    expect(verdict.ok && verdict.warning).toContain('mode 0750');
    expect(verdict.ok && verdict.warning).toContain('chmod 700 /ckpt');
    expect(judge(stats(1000, 1000, 0o755))).toEqual({
      ok: true,
      warning: expect.stringContaining('readable by group and others:'),
    });
    expect(judge(stats(1000, 1000, 0o701))).toEqual({
      ok: true,
      warning: expect.stringContaining('readable by others:'),
    });
  });

  it('refuses a world-writable directory, even its own and even with the sticky bit', () => {
    expect(judge(stats(1000, 1000, 0o777))).toEqual({
      ok: false,
      problem: 'is writable by others',
      fix: 'chmod 700 /ckpt',
    });
    expect(judge(stats(1000, 1000, 0o1703))).toMatchObject({ ok: false });
    expect(judge(stats(0, 2000, 0o2777))).toEqual({
      ok: false,
      problem: 'is writable by others',
      fix: 'chmod o-w /ckpt',
    });
  });

  it('refuses a directory owned by another uid, root included unless fsGroup-shaped', () => {
    expect(judge(stats(65534, 1000, 0o700))).toEqual({
      ok: false,
      problem: 'is owned by uid 65534, not by this process',
      fix: 'chown 1000 /ckpt',
    });
    expect(judge(stats(0, 0, 0o755))).toMatchObject({ ok: false, fix: 'chown 1000 /ckpt' });
    // Group-writable by its group, but owned by another user who can chmod it at will.
    expect(judge(stats(65534, 2000, 0o2770))).toMatchObject({
      ok: false,
      problem: 'is owned by uid 65534, not by this process',
    });
    expect(judge(stats(65534, 1000, 0o777))).toEqual({
      ok: false,
      problem: 'is writable by others and is owned by uid 65534, not by this process',
      fix: 'chown 1000 /ckpt && chmod 700 /ckpt',
    });
  });

  it('refuses a group-writable directory of a group it is not in, or without setgid', () => {
    expect(judge(stats(1000, 3000, 0o2770))).toEqual({
      ok: false,
      problem: 'is writable by group 3000, which this process is not in',
      fix: 'chmod 700 /ckpt',
    });
    expect(judge(stats(1000, 1000, 0o770))).toMatchObject({
      ok: false,
      problem: 'is writable by group 1000 (not a setgid, fsGroup-style directory)',
    });
  });

  it('accepts the volume root and shard directories Kubernetes fsGroup makes', () => {
    // The volume root: root-owned, the group changed to the fsGroup, g+rwx and setgid added.
    expect(judge(stats(0, 2000, 0o2770))).toEqual({ ok: true });
    expect(judge(stats(0, 2000, 0o2775))).toEqual({
      ok: true,
      warning: expect.stringContaining('readable by others:'),
    });
    // A shard directory this pserver made, after a remount.
    expect(judge(stats(1000, 2000, 0o2770))).toEqual({ ok: true });
  });

  it('refuses something that is not a directory', () => {
    expect(judge(stats(1000, 1000, 0o600, regularFile))).toMatchObject({
      ok: false,
      problem: 'is not a directory',
    });
  });

  it('quotes a path with spaces in the command it suggests', () => {
    expect(judge(stats(1000, 1000, 0o777), "/my ckpt's")).toMatchObject({
      fix: `chmod 700 '/my ckpt'\\''s'`,
    });
  });
});

describe('checkCheckpointDirectories', () => {
  let base: string;
  const me = { uid: process.geteuid!(), groups: [process.getegid!()] };

  beforeEach(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), 'directory-check-'));
  });
  afterEach(() => fs.rmSync(base, { recursive: true, force: true }));

  it('creates a missing directory 0700 whatever the umask', async () => {
    const dir = path.join(base, 'a', 'checkpoints');
    const umask = process.umask(0);
    try {
      expect(await checkCheckpointDirectories(dir, 0, me)).toEqual({ ok: true, warnings: [] });
    } finally {
      process.umask(umask);
    }
    expect(fs.statSync(dir).mode & 0o7777).toBe(0o700);
    expect(fs.statSync(path.join(base, 'a')).mode & 0o7777).toBe(0o700);
  });

  it('checks the shard directory when it exists, in one line naming dir, owner, mode, uid and fix', async () => {
    fs.chmodSync(base, 0o700);
    const shard = path.join(base, 'shard-3');
    fs.mkdirSync(shard);
    fs.chmodSync(shard, 0o777);
    const check = await checkCheckpointDirectories(base, 3, me);
    expect(check).toEqual({
      ok: false,
      message:
        `checkpoint directory ${shard} is writable by others (owner uid ${me.uid}, mode 0777; ` +
        `this process runs as uid ${me.uid}): anyone who can write there can replace the shard ` +
        `this pserver restores. Fix it with: chmod 700 ${shard}`,
    });
    expect(await checkCheckpointDirectories(base, 2, me)).toEqual({ ok: true, warnings: [] });
  });

  it('returns the warnings of both directories', async () => {
    fs.chmodSync(base, 0o750);
    fs.mkdirSync(path.join(base, 'shard-0'));
    fs.chmodSync(path.join(base, 'shard-0'), 0o705);
    const check = await checkCheckpointDirectories(base, 0, me);
    expect(check.ok && check.warnings).toEqual([
      expect.stringContaining(`${base} (owner uid ${me.uid}, mode 0750) is readable by group`),
      expect.stringContaining('mode 0705) is readable by others'),
    ]);
  });

  it('refuses a path that is a file', async () => {
    const file = path.join(base, 'file');
    fs.writeFileSync(file, '');
    expect(await checkCheckpointDirectories(file, 0, me)).toMatchObject({
      ok: false,
      message: expect.stringContaining(`checkpoint directory ${file} is not a directory`),
    });
  });

  it('checks nothing where the platform has no uids', async () => {
    fs.chmodSync(base, 0o777);
    expect(await checkCheckpointDirectories(base, 0, null)).toEqual({
      ok: true,
      warnings: [],
    });
  });
});
