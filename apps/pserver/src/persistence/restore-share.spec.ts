import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CheckpointMeta } from '@pserver/checkpoint';
import { shardOf } from '@pserver/proto';
import { replay } from '../replication/replay';
import { Shard } from '../shard/shard';
import { StoredTensor } from '../shard/stored-tensor';
import { restoreShare } from './restore-share';
import { checkpointOf, oldShard, pushTo, stateOf, trainer } from '../../test/share-fixtures';

describe('restoring a share of a job written at another shard count', () => {
  let root: string;
  beforeEach(() => (root = fs.mkdtempSync(path.join(os.tmpdir(), 'restore-share-'))));
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it.each([
    [2, 3],
    [3, 2],
    [2, 5],
  ])(
    'from %i shards onto %i: every slice on its new owner, and a step in flight applied once',
    async (from, to) => {
      // The job at `from`: step 1 everywhere, step 2 applied on shard 0 only (in flight when it
      // stopped); the reference: step 2 applied everywhere once.
      const old = Array.from({ length: from }, (_, i) => oldShard(i, from));
      const reference = Array.from({ length: from }, (_, i) => oldShard(i, from));
      for (const shard of [...old, ...reference]) pushTo(shard, 1);
      pushTo(old[0]!, 2);
      for (const shard of reference) pushTo(shard, 2);
      const sources = new Map<number, CheckpointMeta>();
      for (const shard of old) sources.set(shard.index, await checkpointOf(root, shard));

      const restored: Shard[] = [];
      for (let i = 0; i < to; i++) {
        const shard = new Shard(i, to, undefined);
        await restoreShare(root, { from, sources }, shard);
        restored.push(shard);
      }
      // The same model, every slice where the rule puts it at `to`.
      expect(stateOf(restored)).toEqual(stateOf(old));
      for (const shard of restored)
        for (const name of shard.tensors.keys()) expect(shardOf(name, to)).toBe(shard.index);
      // Re-run step 2 everywhere: applied where it was not, left out where it was.
      for (const shard of restored) pushTo(shard, 2);
      expect(stateOf(restored)).toEqual(stateOf(reference));
      for (const shard of restored) {
        expect(shard.marks.lastStep(trainer)).toBe(2);
        expect(shard.ahead.empty).toBe(true);
      }
    },
  );

  it('opens the SYNC step the fewest sources closed: the closed steps of a share are the lowest of its sources', async () => {
    const old = [oldShard(0, 2), oldShard(1, 2)];
    old[0]!.closedSteps = 5;
    old[1]!.closedSteps = 4;
    const sources = new Map([
      [0, await checkpointOf(root, old[0]!)],
      [1, await checkpointOf(root, old[1]!)],
    ]);
    // Shard 2 of 3 takes slices of both; shard 0 of 3 only old shard 0's.
    const both = new Shard(2, 3, undefined);
    await restoreShare(root, { from: 2, sources }, both);
    expect(both.closedSteps).toBe(4);
    const one = new Shard(0, 3, undefined);
    await restoreShare(root, { from: 2, sources }, one);
    expect(one.closedSteps).toBe(5);
  });

  it('puts a share of no slice at every source’s lowest clock and marks', async () => {
    // One old shard holding one block: at 2 shards, one of them holds nothing.
    const lone = new Shard(0, 1, undefined);
    lone.put(
      StoredTensor.create({
        name: 'v',
        elementType: 'ELEMENT_TYPE_FLOAT32',
        shape: [],
        content: new Uint8Array(new Float32Array([1]).buffer),
        config: { learningRate: { base: 1 }, nonFinite: 'NON_FINITE_POLICY_REJECT' },
        memory: undefined,
      }),
    );
    lone.markInitialized();
    lone.closedSteps = 6;
    replay(lone, { trainerId: trainer, step: 6, grads: [], sparse: [], evictions: [] });
    const sources = new Map([[0, await checkpointOf(root, lone)]]);
    const empty = new Shard(1 - shardOf('v', 2), 2, undefined);
    await restoreShare(root, { from: 1, sources }, empty);
    expect(empty.tensors.size).toBe(0);
    expect(empty.closedSteps).toBe(6);
    expect(empty.marks.lastStep(trainer)).toBe(6);
    expect(empty.ahead.empty).toBe(true);
  });

  it('keeps the marks of slices whose shard counted the step in flight ahead of the new shard', async () => {
    const old = [oldShard(0, 2), oldShard(1, 2)];
    for (const shard of old) pushTo(shard, 1);
    pushTo(old[0]!, 2);
    const sources = new Map([
      [0, await checkpointOf(root, old[0]!)],
      [1, await checkpointOf(root, old[1]!)],
    ]);
    // Growing 2 → 3 keeps every slice that stays where it was: shard 2 of 3 is the one that takes
    // slices from both old shards.
    const shard = new Shard(2, 3, undefined);
    await restoreShare(root, { from: 2, sources }, shard);
    expect(shard.marks.lastStep(trainer)).toBe(1);
    const [group] = shard.ahead.entries();
    expect(group!.marks.map((m) => [m.trainerId, m.step])).toEqual([[trainer, 2]]);
    // Every slice of the group came from old shard 0, the one that applied step 2.
    for (const slice of group!.slices) expect(shardOf(slice, 2)).toBe(0);
  });
});
