import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CheckpointMeta } from '@pserver/checkpoint';
import {
  checkpointOf,
  closeStepOn,
  oldShard,
  pushTo,
  shapeOf,
  trainer,
} from '../../test/share-fixtures';
import { restoreShare } from '../persistence/restore-share';
import { shardDigest } from '../replication/shard-digest';
import type { PushRecord } from '../shard/push-record';
import { Shard } from '../shard/shard';
import { partOfShard, SharePlacement } from '../shard/share-parts';
import { IncomingShare } from './incoming-share';
import { sliceRecord } from './record-slices';

/** The shard's marks and marks ahead, without the times they were set. */
const marksOf = (shard: Shard) => ({
  marks: shard.marks.entries().map(({ trainerId, step }) => ({ trainerId, step })),
  ahead: shard.ahead.entries().map(({ slices, marks }) => ({
    slices,
    marks: marks.map(({ trainerId, step }) => ({ trainerId, step })),
  })),
});

describe('the receiving side of a live move', () => {
  let root: string;
  beforeEach(() => (root = fs.mkdtempSync(path.join(os.tmpdir(), 'incoming-share-'))));
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it.each([
    [2, 3, false],
    [3, 2, false],
    [2, 4, false],
    [2, 3, true],
    [3, 2, true],
  ])(
    'from %i shards onto %i (the old indices keep theirs in memory: %s): each new shard equals the one restored from the final checkpoints, byte for byte',
    async (from, to, keepOwn) => {
      const placement = new SharePlacement(from, to);
      const old = Array.from({ length: from }, (_, i) => oldShard(i, from));
      for (const shard of old) pushTo(shard, 1);
      pushTo(old[0]!, 1, 9);
      // A new index that is also an old one keeps that one's slices in memory: it receives only
      // the others'.
      const receives = (k: number, source: number): boolean => !keepOwn || k !== source;
      const incoming = Array.from(
        { length: to },
        (_, k) => new IncomingShare(placement, k, undefined),
      );

      // The copies, taken now, and the pushes after them: each forwarded, sliced, to every new
      // index — delivered last to first, the first of them before the copy is loaded.
      const copies = new Map<number, { meta: CheckpointMeta; seq: number }>();
      for (const shard of old)
        copies.set(shard.index, {
          meta: await checkpointOf(root, shard, 'copy'),
          seq: shard.appliedSeq,
        });
      const forwards: { source: number; seq: number; record: PushRecord }[] = [];
      const push = (shard: Shard, record: PushRecord | undefined): void => {
        if (record) forwards.push({ source: shard.index, seq: shard.appliedSeq, record });
      };
      for (const shard of old) push(shard, pushTo(shard, 2));
      // Trainer 7's step 3 is in flight at the hand-over: applied on old shard 0 only.
      push(old[0]!, pushTo(old[0]!, 3));
      push(old[1]!, pushTo(old[1]!, 2, 9, [1n, 2n, 3n, 4n, 5n, 6n]));
      const applied: Promise<number>[] = [];
      for (const { source, seq, record } of forwards.reverse())
        for (let k = 0; k < to; k++)
          if (receives(k, source))
            applied.push(
              incoming[k]!.forward(
                source,
                1,
                seq,
                sliceRecord(record, placement, k, shapeOf(old[source]!)),
              ),
            );
      for (let k = 0; k < to; k++)
        for (const [source, { meta, seq }] of copies)
          if (receives(k, source)) await incoming[k]!.load(source, root, meta, seq, 1);
      await Promise.all(applied);
      for (let k = 0; k < to; k++)
        for (const [source, seq] of incoming[k]!.applied())
          expect(seq).toBe(old[source]!.appliedSeq);

      // The reference: what a stop-the-world change restores from the final checkpoints.
      const finals = new Map<number, CheckpointMeta>();
      for (const shard of old) finals.set(shard.index, await checkpointOf(root, shard, 'final'));
      let ahead = 0;
      for (let k = 0; k < to; k++) {
        const restored = new Shard(k, to, undefined);
        await restoreShare(root, { from, sources: finals }, restored);
        const own = keepOwn && k < from ? [partOfShard(old[k]!, placement, k, k)] : [];
        const merged = incoming[k]!.merge(own);
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

  it('SYNC: a step closed after the copy moves with its means and its contributors’ marks; one closed on a single old shard stays open', async () => {
    const placement = new SharePlacement(2, 3);
    const old = [oldShard(0, 2), oldShard(1, 2)];
    for (const shard of old) closeStepOn(shard, 1, [trainer, 9]);
    const copies = await Promise.all(old.map((shard) => checkpointOf(root, shard, 'copy')));
    const seqs = old.map((shard) => shard.appliedSeq);
    const forwards: { shard: Shard; seq: number; record: PushRecord }[] = [];
    const close = (shard: Shard, step: number, contributors: number[]): void => {
      const record = closeStepOn(shard, step, contributors);
      forwards.push({ shard, seq: shard.appliedSeq, record });
    };
    for (const shard of old) close(shard, 2, [trainer, 9]);
    // Step 3 closed on old shard 0 only when the count changed.
    close(old[0]!, 3, [trainer]);
    const finals = new Map<number, CheckpointMeta>();
    for (const shard of old) finals.set(shard.index, await checkpointOf(root, shard, 'final'));
    for (let k = 0; k < 3; k++) {
      const incoming = new IncomingShare(placement, k, undefined);
      for (const shard of old)
        await incoming.load(shard.index, root, copies[shard.index]!, seqs[shard.index]!, 1);
      for (const { shard, seq, record } of forwards)
        await incoming.forward(
          shard.index,
          1,
          seq,
          sliceRecord(record, placement, k, shapeOf(shard)),
        );
      const merged = incoming.merge();
      const restored = new Shard(k, 3, undefined);
      await restoreShare(root, { from: 2, sources: finals }, restored);
      expect(shardDigest(merged)).toBe(shardDigest(restored));
      expect(marksOf(merged)).toEqual(marksOf(restored));
      expect(merged.closedSteps).toBe(restored.closedSteps);
    }
  });

  it('refuses to hand over before every old shard’s copy is loaded, and a forward after a discard', async () => {
    const placement = new SharePlacement(2, 3);
    const old = [oldShard(0, 2), oldShard(1, 2)];
    const incoming = new IncomingShare(placement, 2, undefined);
    await incoming.load(0, root, await checkpointOf(root, old[0]!), 0, 1);
    expect(() => incoming.merge()).toThrow(/no copy of old shard 1 yet/);
    const waiting = incoming.forward(
      1,
      1,
      1,
      sliceRecord(pushTo(old[1]!, 1)!, placement, 2, shapeOf(old[1]!)),
    );
    incoming.discard(new Error('rolled back'));
    await expect(waiting).rejects.toThrow('rolled back');
    expect(() =>
      incoming.forward(0, 1, 1, { trainerId: 1, step: 1, grads: [], sparse: [], evictions: [] }),
    ).toThrow('rolled back');
  });
});
