import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CheckpointMeta } from '@pserver/checkpoint';
import { restoreShare } from '../persistence/restore-share';
import { checkpointOf, oldShard, pushTo, trainer } from '../../test/share-fixtures';
import { replay } from '../replication/replay';
import { shardDigest } from '../replication/shard-digest';
import type { PushRecord } from '../shard/push-record';
import { Shard } from '../shard/shard';
import { mergeParts, partOfShard, SharePlacement } from '../shard/share-parts';
import { sliceRecord } from './record-slices';

/** The shape of the fixtures' one table, as the sender's shard gives it. */
const shapeOf = (shard: Shard) => (table: string) => {
  const { dim, buckets } = shard.tables.get(table)!.table;
  return { dim, buckets };
};

/** The shard's marks and marks ahead, without the times they were set. */
const marksOf = (shard: Shard) => ({
  marks: shard.marks.entries().map(({ trainerId, step }) => ({ trainerId, step })),
  ahead: shard.ahead.entries().map(({ slices, marks }) => ({
    slices,
    marks: marks.map(({ trainerId, step }) => ({ trainerId, step })),
  })),
});

describe('a live move: a copy of the slices, caught up from the sliced pushes, then merged', () => {
  let root: string;
  beforeEach(() => (root = fs.mkdtempSync(path.join(os.tmpdir(), 'record-slices-'))));
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it.each([
    [2, 3],
    [3, 2],
    [2, 4],
  ])(
    'from %i shards onto %i: each new shard equals the one restored from the final checkpoints, byte for byte',
    async (from, to) => {
      const placement = new SharePlacement(from, to);
      const old = Array.from({ length: from }, (_, i) => oldShard(i, from));
      for (const shard of old) pushTo(shard, 1);
      pushTo(old[0]!, 1, 9);

      // The copy: each new index restores its slices of each old shard from a copy taken now.
      const copies = new Map<number, CheckpointMeta>();
      for (const shard of old) copies.set(shard.index, await checkpointOf(root, shard, 'copy'));
      const parts = await Promise.all(
        Array.from({ length: to }, (_, k) =>
          Promise.all(
            old.map(async (shard) => {
              const part = new Shard(k, to, undefined);
              const sources = new Map([[shard.index, copies.get(shard.index)!]]);
              await restoreShare(root, { from, sources }, part);
              return part;
            }),
          ),
        ),
      );

      // Training goes on at the old count: every push is forwarded, sliced, to every new index.
      const forward = (shard: Shard, record: PushRecord | undefined): void => {
        if (!record) return;
        for (let k = 0; k < to; k++)
          replay(parts[k]![shard.index]!, sliceRecord(record, placement, k, shapeOf(shard)));
      };
      for (const shard of old) forward(shard, pushTo(shard, 2));
      // Trainer 7's step 3 is in flight at the hand-over: applied on old shard 0 only.
      forward(old[0]!, pushTo(old[0]!, 3));
      forward(old[1]!, pushTo(old[1]!, 2, 9, [1n, 2n, 3n, 4n, 5n, 6n]));

      // The reference: what a stop-the-world change restores from the final checkpoints.
      const finals = new Map<number, CheckpointMeta>();
      for (const shard of old) finals.set(shard.index, await checkpointOf(root, shard, 'final'));
      let ahead = 0;
      for (let k = 0; k < to; k++) {
        const restored = new Shard(k, to, undefined);
        await restoreShare(root, { from, sources: finals }, restored);
        const merged = new Shard(k, to, undefined);
        mergeParts(
          merged,
          placement,
          parts[k]!.map((part, source) => partOfShard(part, placement, k, source)),
        );
        expect(shardDigest(merged)).toBe(shardDigest(restored));
        // The same marks (a mark's time is when the copy counted it, a millisecond apart).
        expect(marksOf(merged)).toEqual(marksOf(restored));
        ahead += merged.ahead.entries().length;
        // Step 3 applied once: where it was not yet, and nowhere twice.
        pushTo(merged, 3);
        pushTo(restored, 3);
        expect(shardDigest(merged)).toBe(shardDigest(restored));
        expect(merged.marks.lastStep(trainer)).toBe(3);
      }
      // The step in flight left marks ahead on the shards that took slices of both old shards.
      expect(ahead).toBeGreaterThan(0);
    },
  );

  it('keeps a table entry with no rows for the receiver: the copy counts the pushes as its source does', () => {
    const sender = oldShard(0, 1);
    const record = pushTo(sender, 1)!;
    // Index 5 of 2 holds none of them.
    const sliced = sliceRecord(record, new SharePlacement(1, 2), 5, shapeOf(sender));
    expect(sliced.sparse).toHaveLength(1);
    expect(sliced.sparse[0]!.ids.byteLength).toBe(0);
    expect(sliced.grads).toHaveLength(0);
    expect(sliced.trainerId).toBe(trainer);
  });
});
