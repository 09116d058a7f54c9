import { parseConsistency, type JobConsistency } from '@pserver/coordination';
import { fateOf } from '../shard/push-fate';
import { Shard } from '../shard/shard';
import { StagedPush } from '../shard/staged-push';
import { StoredTensor } from '../shard/stored-tensor';
import { consistencyFor } from './consistency';
import { FixedRoster } from './roster';

const f32 = 'ELEMENT_TYPE_FLOAT32';

/** A shard of one float32 tensor `w` of 4 ones, initialized, under `mode` for trainers 1 and 2. */
function shardUnder(mode: string) {
  const shard = new Shard(0, 1, undefined);
  shard.put(
    StoredTensor.create({
      name: 'w',
      elementType: f32,
      shape: [],
      content: new Uint8Array(new Float32Array(4).fill(1).buffer),
      config: { learningRate: { base: 1 }, nonFinite: 'NON_FINITE_POLICY_REJECT' },
      memory: undefined,
    }),
  );
  shard.markInitialized();
  const config: JobConsistency = parseConsistency(mode, 0, 'rerun');
  const consistency = consistencyFor(config, new FixedRoster(2), shard);
  const push = (trainerId: number, step: number) => {
    const staged = new StagedPush((name) => shard.tensors.get(name));
    staged.add('w', f32, 0, new Uint8Array(new Float32Array(4).fill(1).buffer), [], true);
    try {
      return consistency.accept(trainerId, step, 1, staged);
    } finally {
      staged.discard();
    }
  };
  return { shard, consistency, push };
}

describe('the fate of a push (fateOf)', () => {
  it('applies a step above the mark where pushes apply on arrival', () => {
    expect(fateOf(4, 3)).toEqual({ kind: 'apply' });
  });

  it('answers a step not above the mark as a duplicate, whatever the open step', () => {
    expect(fateOf(3, 3)).toEqual({ kind: 'duplicate', lastStep: 3 });
    expect(fateOf(2, 3, 5)).toEqual({ kind: 'duplicate', lastStep: 3 });
  });

  it('joins the open SYNC step, and is late for a step that closed without it', () => {
    expect(fateOf(5, 3, 5)).toEqual({ kind: 'join' });
    expect(fateOf(4, 3, 5)).toEqual({ kind: 'late', lastStep: 3 });
  });

  it('never classifies a SYNC push ahead of the open step (it waits for it first)', () => {
    expect(() => fateOf(6, 3, 5)).toThrow('step 6 pushed before step 5 closed');
  });
});

describe.each([
  ['async', 'PUSH_OUTCOME_APPLIED'],
  ['ssp:1', 'PUSH_OUTCOME_APPLIED'],
  ['sync', 'PUSH_OUTCOME_ACCUMULATED'],
] as const)('a push in %s', (mode, firstOutcome) => {
  it(`comes to ${firstOutcome} first, then a duplicate when sent again`, () => {
    const { push, consistency } = shardUnder(mode);
    expect(consistency.classify(1, 1).kind).toBe(mode === 'sync' ? 'join' : 'apply');
    expect(push(1, 1).outcome).toBe(firstOutcome);
    expect(consistency.classify(1, 1)).toEqual({ kind: 'duplicate', lastStep: 1 });
    expect(push(1, 1)).toMatchObject({ outcome: 'PUSH_OUTCOME_DUPLICATE', lastStep: 1 });
  });
});

describe('a push in each mode, past its step', () => {
  it('ASYNC and SSP apply every push on arrival, each moving the version', () => {
    for (const mode of ['async', 'ssp:1']) {
      const { push, shard, consistency } = shardUnder(mode);
      expect(push(1, 1).applied).toBeDefined();
      expect(push(2, 1).applied).toBeDefined();
      expect(push(1, 2).outcome).toBe('PUSH_OUTCOME_APPLIED');
      expect(consistency.version).toBe(3);
      expect([
        ...new Float32Array(Uint8Array.from(shard.tensors.get('w')!.bytes()).buffer),
      ]).toEqual([-2, -2, -2, -2]);
    }
  });

  it('SYNC closes a step once every trainer joined it, and drops a push for a closed step as late', () => {
    const { push, shard, consistency } = shardUnder('sync');
    expect(push(1, 1).outcome).toBe('PUSH_OUTCOME_ACCUMULATED');
    expect(consistency.version).toBe(0);
    expect(push(2, 1).outcome).toBe('PUSH_OUTCOME_ACCUMULATED');
    expect(consistency.version).toBe(1);
    expect(shard.closedSteps).toBe(1);
    // Trainer 2's mark stays at step 1 while the step closes; a push of step 1 from a trainer whose
    // contribution was never counted (a mark moved back by a restore) is late now.
    shard.marks.set(2, 0);
    expect(consistency.classify(2, 1)).toEqual({ kind: 'late', lastStep: 0 });
    expect(push(2, 1)).toMatchObject({ outcome: 'PUSH_OUTCOME_DROPPED_LATE', lastStep: 0 });
    expect(shard.closedSteps).toBe(1);
  });
});
