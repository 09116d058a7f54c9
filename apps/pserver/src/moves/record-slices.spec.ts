import { bucketsOfIds, shardOf } from '@pserver/proto';
import { oldShard, pushTo, shapeOf, trainer } from '../../test/share-fixtures';
import { SharePlacement } from '../shard/share-parts';
import { sliceRecord } from './record-slices';

describe('slicing a push for a live move', () => {
  it('gives each new index exactly the blocks and rows it holds, with their gradients', () => {
    const sender = oldShard(0, 1);
    const record = pushTo(sender, 1)!;
    const placement = new SharePlacement(1, 3);
    const seen = new Map<bigint, number>();
    const blocks: string[] = [];
    for (let k = 0; k < 3; k++) {
      const sliced = sliceRecord(record, placement, k, shapeOf(sender));
      for (const piece of sliced.grads) {
        expect(shardOf(piece.name, 3)).toBe(k);
        blocks.push(piece.name);
      }
      const [rows] = sliced.sparse;
      const ids = new BigInt64Array(Uint8Array.from(rows!.ids).buffer);
      const buckets = bucketsOfIds(rows!.ids, 16);
      ids.forEach((id, j) => {
        expect(shardOf(`emb@${buckets[j]}`, 3)).toBe(k);
        seen.set(id, new Float32Array(Uint8Array.from(rows!.grads).buffer)[j]!);
      });
      expect(sliced).toMatchObject({ trainerId: trainer, step: 1 });
    }
    expect(blocks.sort()).toEqual(record.grads.map((g) => g.name).sort());
    expect(seen.size).toBe(record.sparse[0]!.ids.byteLength / 8);
    expect([...seen.values()].every((grad) => grad === 1)).toBe(true);
  });

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
