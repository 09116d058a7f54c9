import { createHash } from 'node:crypto';
import { SnapshotBuffers } from '@pserver/checkpoint';
import type { Shard } from '../shard/shard';

/**
 * A digest of everything a push changes in a shard: each tensor's values and optimizer state,
 * each table's rows (by id), the step marks (trainer and step; those some slices hold ahead)
 * and the applied sequence number.
 * A primary and a replica that applied the same pushes in the same order have the same digest;
 * computed synchronously, between two pushes (SHA-256, hex).
 */
export function shardDigest(shard: Shard): string {
  const hash = createHash('sha256');
  const text = (value: string | number): void => void hash.update(`${value}\u0000`);
  text(shard.appliedSeq);
  const buffers = new SnapshotBuffers(1 << 20);
  try {
    for (const name of [...shard.tensors.keys()].sort()) {
      const { tensor, state } = shard.tensors.get(name)!.snapshot(buffers);
      text(name);
      hash.update(tensor.content);
      if (state) {
        text(state.updates);
        for (const slot of state.slots) {
          text(slot.name);
          hash.update(slot.content);
        }
        for (const key of Object.keys(state.scalars).sort()) text(`${key}=${state.scalars[key]}`);
      }
      buffers.release();
    }
  } finally {
    buffers.release();
  }
  for (const name of [...shard.tables.keys()].sort()) {
    text(name);
    shard.tables.get(name)!.table.digest((bytes) => hash.update(bytes));
  }
  for (const mark of shard.marks.entries().sort((a, b) => a.trainerId - b.trainerId))
    text(`${mark.trainerId}:${mark.step}`);
  for (const group of shard.ahead.entries()) {
    text(group.slices.join(','));
    for (const mark of group.marks) text(`${mark.trainerId}:${mark.step}`);
  }
  return hash.digest('hex');
}
