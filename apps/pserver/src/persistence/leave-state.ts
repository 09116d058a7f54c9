import { randomUUID } from 'node:crypto';
import { SnapshotBuffers } from '@pserver/checkpoint';
import type { Logger } from '@pserver/logging';
import type { Shard } from '../shard/shard';
import { writeOrphanedState } from './orphaned-state';
import { snapshotShard } from './shard-snapshot';

/** A shard a fenced pserver held, with the epoch it held it under, for its next owner. */
export interface HeldState {
  shard: Shard;
  epoch: number;
}

/**
 * Cluster mode, on a fence: writes what the shard (or the in-sync copy kept of one) holds now.
 * The copy is taken in the same tick as the fence, so every push acknowledged is in it and none
 * after; the index's next owner adopts it when no other owner came in between
 * (orphaned-state.ts). Never throws: exiting matters more than what could not be written.
 */
export function leaveState(
  root: string,
  { shard, epoch }: HeldState,
  member: string,
  logger: Logger,
): Promise<void> {
  const buffers = new SnapshotBuffers();
  let snapshot: ReturnType<typeof snapshotShard>;
  try {
    snapshot = snapshotShard(shard, { shardEpoch: epoch, seq: 0, uuid: randomUUID() }, buffers);
  } catch (err) {
    buffers.release();
    logger.error("copying the shard's state for its next owner failed", { err });
    return Promise.resolve();
  }
  const facts = { epoch, member, appliedSeq: shard.appliedSeq };
  const started = performance.now();
  return writeOrphanedState(root, snapshot, facts)
    .then((file) =>
      logger.warn("wrote the shard's state for its next owner", {
        file,
        ...facts,
        updatesApplied: snapshot.updatesApplied,
        ms: Math.round(performance.now() - started),
      }),
    )
    .catch((err: unknown) =>
      logger.error("writing the shard's state for its next owner failed", { err }),
    )
    .finally(() => buffers.release());
}
