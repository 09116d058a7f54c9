import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { workspaceRoot } from '@pserver/testing';

/** Runs the built checkpoint tool (`dist/tools/ckpt.js`) with `args`; its status and output. */
export const ckpt = (...args: string[]) =>
  spawnSync(process.execPath, [path.join(workspaceRoot(), 'dist', 'tools', 'ckpt.js'), ...args], {
    encoding: 'utf8',
  });

/** An independent reader of the safetensors format: 8-byte header length, JSON header, data. */
export function readSafetensors(
  file: string,
): Map<string, { dtype: string; shape: number[]; data: Buffer }> {
  const bytes = fs.readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] }
  >;
  const data = bytes.subarray(8 + headerLength);
  const out = new Map<string, { dtype: string; shape: number[]; data: Buffer }>();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    out.set(name, {
      dtype: entry.dtype,
      shape: entry.shape,
      data: data.subarray(entry.data_offsets[0], entry.data_offsets[1]),
    });
  }
  return out;
}
