import { placeTensor, type SparseGrad, type Tensor } from '@pserver/proto';
import { distinctIds, groupByShard, idWords, mergeRows, sparseGradsByShard } from './sparse-rows';
import { StepPushes, type SentPush } from './step-pushes';
import { TableDirectory } from './tables';

// A SYNC step's kept pushes, sent again after the job's shard count changed: every block and row
// goes to the shard that holds it now, once, with the step's sample count.
describe('StepPushes', () => {
  const identity = { trainerId: 4, step: 9, pass: 1 };
  const tables = new TableDirectory();
  const emb = { name: 'emb', dim: 3, buckets: 64 };
  tables.declare(emb);
  const ids = BigInt64Array.from({ length: 50 }, (_, k) => BigInt(k) * 7919n - 100n);
  const rowGrads = Float32Array.from({ length: ids.length * emb.dim }, (_, k) => k / 8);

  /** The step's pushes as the client places them among `shardCount` shards. */
  function pushesAt(shardCount: number, sampleCount: number): Map<number, SentPush> {
    const out = new Map<number, SentPush>();
    const at = (shard: number): SentPush => {
      const push = out.get(shard) ?? { dense: [], sparse: [], sampleCount };
      out.set(shard, push);
      return push;
    };
    const values = Float32Array.from({ length: 2500 }, (_, k) => k);
    for (const block of placeTensor('w', values.length, 256, shardCount))
      at(block.shard).dense.push({
        name: block.name,
        elementType: 'ELEMENT_TYPE_FLOAT32',
        content: Buffer.from(values.slice(block.start, block.end).buffer),
      });
    const merged = mergeRows(emb.dim, [{ ids, grads: rowGrads }]);
    const groups = groupByShard(merged.ids.words, emb, tables.shardsOf(emb, shardCount));
    for (const [shard, grad] of sparseGradsByShard('emb', merged, emb.dim, groups))
      at(shard).sparse.push(grad);
    // Every shard hears of the step; one with nothing of it gets a zero-sample push.
    for (let s = 0; s < shardCount; s++)
      if (!out.has(s)) out.set(s, { dense: [], sparse: [], sampleCount: 0 });
    return out;
  }

  function kept(shardCount: number): StepPushes {
    const pushes = new StepPushes(identity, shardCount);
    for (const [shard, push] of pushesAt(shardCount, 7)) pushes.record(shard, push);
    return pushes;
  }

  const blockNames = (push: SentPush): string[] => push.dense.map((t: Tensor) => t.name!).sort();
  const rowsOf = (grads: SparseGrad[]): Map<bigint, number[]> => {
    const rows = new Map<bigint, number[]>();
    for (const grad of grads) {
      const idBytes = Buffer.from(grad.ids as Uint8Array);
      const gradBytes = Buffer.from(grad.grads as Uint8Array);
      for (let k = 0; k < idBytes.length / 8; k++)
        rows.set(
          idBytes.readBigInt64LE(k * 8),
          [0, 1, 2].map((e) => gradBytes.readFloatLE((k * 3 + e) * 4)),
        );
    }
    return rows;
  };

  it('gives the push as sent under the count the step ran at', () => {
    const pushes = kept(3);
    const expected = pushesAt(3, 7);
    for (let s = 0; s < 3; s++)
      expect(blockNames(pushes.sentTo(s, 4, 9, { shardCount: 3, tables })!)).toEqual(
        blockNames(expected.get(s)!),
      );
  });

  it.each([
    [3, 4],
    [3, 2],
    [2, 5],
  ])('places every block and row anew once the count moved from %i to %i', (from, to) => {
    const pushes = kept(from);
    const expected = pushesAt(to, 7);
    const everyRow = new Map<bigint, number[]>();
    for (let s = 0; s < to; s++) {
      const push = pushes.sentTo(s, 4, 9, { shardCount: to, tables })!;
      // What the step would have sent to shard s had it run at the new count.
      expect(blockNames(push)).toEqual(blockNames(expected.get(s)!));
      expect(rowsOf(push.sparse)).toEqual(rowsOf(expected.get(s)!.sparse));
      const carries = push.dense.length + push.sparse.length > 0;
      expect(push.sampleCount).toBe(carries ? 7 : 0);
      for (const [id, row] of rowsOf(push.sparse)) everyRow.set(id, row);
    }
    expect(everyRow.size).toBe(distinctIds(idWords(ids)).count);
  });

  it('keeps the admission counts with their rows', () => {
    const counted = new StepPushes(identity, 2);
    const grad: SparseGrad = {
      table: 'emb',
      ids: Buffer.from(BigInt64Array.of(5n, 6n).buffer),
      grads: Buffer.from(new Float32Array(6).fill(1).buffer),
      counts: Buffer.from(Uint32Array.of(3, 4).buffer),
    };
    counted.record(0, { dense: [], sparse: [grad], sampleCount: 1 });
    const countsOf = (s: number): number[] =>
      counted
        .sentTo(s, 4, 9, { shardCount: 3, tables })!
        .sparse.flatMap((g) => [
          ...new Uint32Array(new Uint8Array(g.counts as Buffer).slice().buffer),
        ]);
    expect([0, 1, 2].flatMap(countsOf).sort()).toEqual([3, 4]);
  });

  it('has nothing for another trainer or step', () => {
    const pushes = kept(3);
    expect(pushes.sentTo(0, 5, 9, { shardCount: 4, tables })).toBeUndefined();
    expect(pushes.sentTo(0, 4, 8, { shardCount: 4, tables })).toBeUndefined();
  });
});
