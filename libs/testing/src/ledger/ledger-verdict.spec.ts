import type { LedgerAck } from './ledger-trainer';
import { judgeLedger, type LedgerInput, type ShardRestore } from './ledger-verdict';

// Two trainers of 4 coordinates each; coordinates 0–3 on shard 0, 4–7 on shard 1.
const shape = { trainers: 2, capacity: 4, ballast: 0 };
const shardOf = (coordinate: number): number => (coordinate < 4 ? 0 : 1);
const ack = (ordinal: number, k: number, startMs: number, ackMs: number): LedgerAck => ({
  ordinal,
  k,
  trainerId: ordinal + 10,
  step: k + 1,
  startMs,
  ackMs,
});
// Shard 0 restored a snapshot of time 1,000 (trainer 10 at step 2 in it), serving from 2,000.
const restore: ShardRestore = {
  index: 0,
  servingMs: 2_000,
  checkpoint: { file: 'f', snapshotMs: 1_000, marks: new Map([[10, 2]]), delta: false },
};

function judge(values: number[], input: Partial<LedgerInput> = {}) {
  return judgeLedger({
    ...shape,
    values,
    shardOf,
    acks: [
      ack(0, 0, 100, 200),
      ack(0, 1, 300, 400),
      ack(0, 2, 1_100, 1_200),
      ack(0, 3, 2_100, 2_200),
      ack(1, 0, 100, 200),
      ack(1, 1, 1_100, 1_200),
    ],
    errors: [],
    restores: [restore],
    ...input,
  });
}

describe('judgeLedger', () => {
  it('accepts every acknowledged step applied once and nothing else', () => {
    const verdict = judge([1, 1, 1, 1, 1, 1, 0, 0]);
    expect(verdict).toMatchObject({
      doubles: [],
      lost: [],
      unexplainedZeros: [],
      phantoms: [],
      acknowledged: 6,
    });
  });

  it('counts a coordinate above 1 as a double, wherever it is', () => {
    const verdict = judge([1, 2, 1, 1, 1, 1, 0, 3]);
    expect(verdict.doubles.map((e) => [e.ordinal, e.k, e.value])).toEqual([
      [0, 1, 2],
      [1, 3, 3],
    ]);
  });

  it('allows a zero acknowledged after the restored snapshot by a step begun before the spare served', () => {
    const verdict = judge([1, 1, 0, 1, 1, 1, 0, 0]);
    expect(verdict.lost.map((e) => e.k)).toEqual([2]);
    expect(verdict.unexplainedZeros).toEqual([]);
  });

  it('does not allow a zero acknowledged before the snapshot, begun after the spare served, or held by the marks', () => {
    // k 1: acknowledged at 400, before the snapshot (1,000). k 3: begun at 2,100, after serving.
    expect(judge([1, 0, 1, 0, 1, 1, 0, 0]).unexplainedZeros.map((e) => e.k)).toEqual([1, 3]);
    // k 2 (step 3) is in the snapshot if trainer 10's mark says 3.
    const marked = { ...restore, checkpoint: { ...restore.checkpoint, marks: new Map([[10, 3]]) } };
    expect(judge([1, 1, 0, 1, 1, 1, 0, 0], { restores: [marked] }).unexplainedZeros).toHaveLength(
      1,
    );
  });

  it('does not allow a zero on a shard that no replacement restored', () => {
    // Trainer 1's k 1 is coordinate 5, on shard 1.
    expect(judge([1, 1, 1, 1, 1, 0, 0, 0]).unexplainedZeros.map((e) => e.shard)).toEqual([1]);
  });

  it('counts a one where no step was acknowledged as a phantom, unless that step threw', () => {
    expect(judge([1, 1, 1, 1, 1, 1, 1, 0]).phantoms.map((e) => [e.ordinal, e.k])).toEqual([[1, 2]]);
    const errors = [{ ordinal: 1, k: 2, startMs: 0, atMs: 0, error: 'CLIENT_STEP_FAILED' }];
    expect(judge([1, 1, 1, 1, 1, 1, 1, 0], { errors }).phantoms).toEqual([]);
  });
});
