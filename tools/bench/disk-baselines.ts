/**
 * What the checkpoint benchmarks measure a pserver's files against, on the same filesystem in the
 * same run: `dd bs=4M conv=fsync` of a size and a plain read of its file, and a new pserver
 * process restoring a checkpoint directory. As root, the page cache is dropped before each read,
 * so reads come from the disk.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startPserverProcess, stopAllProcesses } from '@pserver/testing';

const blockBytes = 4 * 1024 * 1024;

/** Drops the page cache (root only); says whether it did. */
export function dropCaches(): boolean {
  if (process.getuid?.() !== 0) return false;
  spawnSync('sync');
  try {
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

/**
 * `dd` of `blocks` 4 MiB blocks with fsync into `dir`, then a plain read of that file (from the
 * disk when the cache could be dropped); the file is removed.
 */
export function ddAndRead(
  dir: string,
  blocks: number,
): { bytes: number; ddSeconds: number; readSeconds: number; coldRead: boolean } {
  const file = path.join(dir, 'dd.bin');
  const ddStart = performance.now();
  spawnSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=4M', `count=${blocks}`, 'conv=fsync'], {
    stdio: 'ignore',
  });
  const ddSeconds = (performance.now() - ddStart) / 1000;
  const coldRead = dropCaches();
  const readStart = performance.now();
  const fd = fs.openSync(file, 'r');
  const buffer = Buffer.alloc(blockBytes);
  while (fs.readSync(fd, buffer, 0, blockBytes, null) > 0);
  fs.closeSync(fd);
  const readSeconds = (performance.now() - readStart) / 1000;
  fs.rmSync(file);
  return { bytes: blocks * blockBytes, ddSeconds, readSeconds, coldRead };
}

/**
 * A new pserver process recovering `checkpointDir` (the cache dropped first when it can be):
 * its "recovered the shard" log entry. Every process is stopped afterwards.
 */
export async function restoreByNewProcess(
  checkpointDir: string,
  name: string,
): Promise<{ recovered: Record<string, unknown>; coldRestore: boolean }> {
  const coldRestore = dropCaches();
  const restarted = await startPserverProcess([], { checkpointDir, name, timeoutMs: 600_000 });
  const recovered = restarted.process
    .jsonLines()
    .find((e) => e.msg === 'recovered the shard from a checkpoint')!;
  await restarted.process.stop({ signal: 'SIGKILL' });
  await stopAllProcesses();
  return { recovered, coldRestore };
}

export const gbps = (bytes: number, seconds: number): string =>
  `${(bytes / seconds / 1e9).toFixed(2)} GB/s`;

export const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[values.length >> 1]!;
