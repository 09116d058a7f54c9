import { createHash } from 'node:crypto';
import { SnapshotBuffers, type ShardSnapshot } from '@pserver/checkpoint';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Shard } from '../shard/shard';
import { StoredTensor } from '../shard/stored-tensor';
import { oldShard, pushTo } from '../../test/share-fixtures';
import { snapshotShard, startSnapshot } from './shard-snapshot';

const f32 = 'ELEMENT_TYPE_FLOAT32';
/** 4 MiB a tensor: the copy yields to pushes between tensors (every 8 MiB). */
const elements = 1 << 20;
const names = ['a', 'b', 'c', 'd', 'e', 'f'];

/** Six tensors under Adam (values and two slots each), tensor i filled with i. */
function shard(): Shard {
  const made = new Shard(0, 1, undefined);
  names.forEach((name, i) =>
    made.put(
      StoredTensor.create({
        name,
        elementType: f32,
        shape: [elements],
        content: new Uint8Array(new Float32Array(elements).fill(i).buffer),
        config: {
          learningRate: { base: 0.5 },
          adam: {},
          nonFinite: 'NON_FINITE_POLICY_REJECT',
        } as never,
        memory: undefined,
      }),
    ),
  );
  made.markInitialized();
  return made;
}

/** One update of gradient 1 to every element of `tensor`. */
function push(tensor: StoredTensor): void {
  const gradient = tensor.allocateGradient();
  (gradient.values as Float32Array).fill(1);
  tensor.apply(gradient);
  gradient.release();
}

/** Each tensor's bytes, its slots' (as digests: 4 MiB compared element by element is slow) and its scalars. */
function contents(snapshot: ShardSnapshot): unknown[] {
  const digest = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
  return snapshot.tensors.map(({ tensor, state }) => ({
    name: tensor.name,
    content: digest(tensor.content),
    updates: state?.updates,
    slots: state?.slots.map((slot) => digest(slot.content)),
    scalars: state?.scalars,
  }));
}

const file = { shardEpoch: 1, seq: 1, uuid: 'u' };

describe('a snapshot taken copy-on-write', () => {
  it('holds the shard as it was when it began, through pushes and releases while it copies', async () => {
    const s = shard();
    const before = contents(snapshotShard(s, file, new SnapshotBuffers()));
    const copying = startSnapshot(s, file, new SnapshotBuffers());
    // Before the copy runs: a push to one tensor, and another tensor's memory released.
    push(s.tensors.get('a')!);
    s.tensors.get('f')!.release();
    // While it runs, a push after each turn of the event loop.
    let pushesDuring = 0;
    let done = false;
    const pushing = (async () => {
      for (const name of ['e', 'd', 'c', 'b']) {
        await nextTurn();
        if (done) break;
        push(s.tensors.get(name)!);
        pushesDuring++;
      }
    })();
    const snapshot = await copying.finish();
    done = true;
    await pushing;
    expect(pushesDuring).toBeGreaterThan(0);
    expect(contents(snapshot)).toEqual(before);
    expect(s.tensors.get('a')!.updates).toBe(1);
    expect(new Float32Array(s.tensors.get('a')!.content().buffer)[0]).not.toBe(0);
  });

  it('leaves no hook behind: the next snapshot can begin, and sees the pushes since', async () => {
    const s = shard();
    await startSnapshot(s, file, new SnapshotBuffers()).finish();
    push(s.tensors.get('b')!);
    const after = contents(snapshotShard(s, file, new SnapshotBuffers()));
    expect(contents(await startSnapshot(s, file, new SnapshotBuffers()).finish())).toEqual(after);
  });

  it('cancelled, copies nothing more into its buffers and lets the next one begin', async () => {
    const s = shard();
    const buffers = new SnapshotBuffers();
    startSnapshot(s, file, buffers).cancel();
    const taken = buffers.retainedBytes;
    push(s.tensors.get('c')!);
    expect(buffers.retainedBytes).toBe(taken);
    const after = contents(snapshotShard(s, file, new SnapshotBuffers()));
    expect(contents(await startSnapshot(s, file, new SnapshotBuffers()).finish())).toEqual(after);
  });

  it("holds a table's rows, step and pending ids as they were when it began", async () => {
    const s = oldShard(0, 1);
    for (let step = 1; step <= 3; step++) pushTo(s, step);
    /** Each table's step, rows and row bytes (sections are read one after another). */
    const tables = (snapshot: ShardSnapshot): unknown[] =>
      (snapshot.tables ?? []).map((table) => {
        const rows: string[] = [];
        for (const section of table.sections)
          rows.push(
            [section.ids, section.values, section.lastSeen, section.counts]
              .map((bytes) => Buffer.from(bytes).toString('hex'))
              .join('/'),
          );
        return { step: table.step, rows: table.rows, pending: table.pendingIds, sections: rows };
      });
    const before = tables(snapshotShard(s, file, new SnapshotBuffers()));
    const marksBefore = s.marks.entries();
    const copying = startSnapshot(s, file, new SnapshotBuffers());
    for (let step = 4; step <= 6; step++) pushTo(s, step);
    const snapshot = await copying.finish();
    expect(tables(snapshot)).toEqual(before);
    expect(snapshot.marks).toEqual(marksBefore);
    expect(s.tables.get('emb')!.table.step).toBeGreaterThan(snapshot.tables![0]!.step);
  });
});
