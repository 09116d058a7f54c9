import fs from 'node:fs/promises';
import path from 'node:path';
import { shardDirectory } from './manifest-store';

/** What the check reads of a directory: the fields of `fs.Stats` it needs. */
export interface DirectoryStats {
  uid: number;
  gid: number;
  /** `st_mode`: the file type and the permission bits. */
  mode: number;
  isDirectory(): boolean;
}

/** Who the process is. */
export interface ProcessIdentity {
  /** The effective uid. */
  uid: number;
  /** The effective gid and the supplementary groups (Kubernetes adds its fsGroup there). */
  groups: readonly number[];
}

/** Whether a directory may hold checkpoints, and what to tell the operator. */
export type DirectoryVerdict =
  { ok: true; warning?: string } | { ok: false; problem: string; fix: string };

const setgidBit = 0o2000;
const groupWrite = 0o020;
const otherWrite = 0o002;
const groupAccess = 0o070;
const otherAccess = 0o007;

/**
 * Judges a checkpoint directory (or a shard's directory in it). Whoever may write there can
 * replace a checkpoint, and the shard a pserver restores with it, so:
 *
 * - writable by others: refused;
 * - owned by another uid: refused (its owner can change the mode back at any time);
 * - writable by group: refused, except in the shape Kubernetes' `fsGroup` gives a volume — a
 *   setgid directory whose group is one of this process's groups, possibly owned by root (the
 *   kubelet changes the group of a volume, and adds group rwx and setgid, not the owner; on a
 *   remount it does so to every directory in it). The shipped pserver Deployment sets
 *   `fsGroup: 1000` and every pserver pod runs as the image's uid 1000, so the group is the job's
 *   own pservers, which must share the volume anyway: a spare takes over `shard-<i>/`. Root is
 *   trusted as an owner in that shape only: a root-owned directory this process cannot write to
 *   through its group would fail later, with a less clear error;
 * - readable or searchable by group or others: allowed with a warning. The files in it are 0600,
 *   but their names, sizes and times are visible. In the fsGroup shape only others count.
 */
export function judgeCheckpointDirectory(
  dir: string,
  stats: DirectoryStats,
  identity: ProcessIdentity,
): DirectoryVerdict {
  const mode = stats.mode & 0o7777;
  const word = shellQuote(dir);
  if (!stats.isDirectory())
    return { ok: false, problem: 'is not a directory', fix: `mv ${word} ${word}.old` };
  const sharedGroup =
    (mode & groupWrite) !== 0 && (mode & setgidBit) !== 0 && identity.groups.includes(stats.gid);
  const ownerTrusted = stats.uid === identity.uid || (stats.uid === 0 && sharedGroup);
  const worldWritable = (mode & otherWrite) !== 0;
  // Subsumed by world-writable when both.
  const foreignGroupWritable = (mode & groupWrite) !== 0 && !sharedGroup && !worldWritable;
  const problems: string[] = [];
  if (worldWritable) problems.push('is writable by others');
  if (!ownerTrusted) problems.push(`is owned by uid ${stats.uid}, not by this process`);
  if (foreignGroupWritable) {
    problems.push(
      identity.groups.includes(stats.gid)
        ? `is writable by group ${stats.gid} (not a setgid, fsGroup-style directory)`
        : `is writable by group ${stats.gid}, which this process is not in`,
    );
  }
  if (problems.length > 0) {
    const fixes: string[] = [];
    if (!ownerTrusted) fixes.push(`chown ${identity.uid} ${word}`);
    if (worldWritable || foreignGroupWritable)
      fixes.push(sharedGroup ? `chmod o-w ${word}` : `chmod 700 ${word}`);
    return { ok: false, problem: problems.join(' and '), fix: fixes.join(' && ') };
  }
  const exposed = mode & (sharedGroup ? otherAccess : groupAccess | otherAccess);
  if (exposed === 0) return { ok: true };
  const who = [(exposed & groupAccess) !== 0 && 'group', (exposed & otherAccess) !== 0 && 'others']
    .filter(Boolean)
    .join(' and ');
  return {
    ok: true,
    warning:
      `checkpoint directory ${dir} (owner uid ${stats.uid}, mode ${octal(mode)}) is readable by ${who}: ` +
      `the checkpoint files are 0600, but their names and sizes are visible; ` +
      `${sharedGroup ? `chmod o-rwx ${word}` : `chmod 700 ${word}`} makes it private`,
  };
}

/** The process's identity, or null where there are no uids (Windows): nothing to check. */
export function currentIdentity(): ProcessIdentity | null {
  if (!process.geteuid || !process.getegid || !process.getgroups) return null;
  return { uid: process.geteuid(), groups: [process.getegid(), ...process.getgroups()] };
}

/** The outcome of `checkCheckpointDirectories`. */
export type DirectoriesCheck =
  | { ok: true; warnings: string[] }
  | {
      ok: false;
      /** One line: the directory, its owner and mode, the process's uid, the command to fix it. */
      message: string;
    };

/**
 * Checks the checkpoint directory before anything is recovered or written: creates it (0700,
 * whatever the umask) when it does not exist, then judges it, and the directory of shard
 * `index` in it when that exists. Returns the warnings to log, or the reason to refuse to start.
 */
export async function checkCheckpointDirectories(
  root: string,
  index: number | undefined,
  identity: ProcessIdentity | null = currentIdentity(),
): Promise<DirectoriesCheck> {
  try {
    await fs.mkdir(root, { recursive: true, mode: 0o700 });
  } catch (err) {
    // Something that is not a directory: the verdict below says so.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  if (!identity) return { ok: true, warnings: [] };
  const warnings: string[] = [];
  const dirs = [root];
  if (index !== undefined) dirs.push(path.join(root, shardDirectory(index)));
  for (const dir of dirs) {
    let stats: DirectoryStats;
    try {
      stats = await fs.stat(dir);
    } catch (err) {
      if (dir !== root && (err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    const verdict = judgeCheckpointDirectory(dir, stats, identity);
    if (!verdict.ok) {
      return {
        ok: false,
        message:
          `checkpoint directory ${dir} ${verdict.problem} (owner uid ${stats.uid}, ` +
          `mode ${octal(stats.mode & 0o7777)}; this process runs as uid ${identity.uid}): ` +
          `anyone who can write there can replace the shard this pserver restores. ` +
          `Fix it with: ${verdict.fix}`,
      };
    }
    if (verdict.warning) warnings.push(verdict.warning);
  }
  return { ok: true, warnings };
}

function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}

/** A path as a shell word, quoted only when it needs to be. */
function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
