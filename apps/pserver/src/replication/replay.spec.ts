import type { PserverError } from '../shard/errors';
import type { PushRecord } from '../shard/push-record';
import { Shard } from '../shard/shard';
import { StoredTensor } from '../shard/stored-tensor';
import { replay } from './replay';

const f32 = 'ELEMENT_TYPE_FLOAT32';

function replica(): Shard {
  const shard = new Shard(0, 1, undefined);
  shard.put(
    StoredTensor.create({
      name: 'w',
      elementType: f32,
      shape: [],
      content: new Uint8Array(new Float32Array(2).fill(1).buffer),
      config: { learningRate: { base: 1 }, nonFinite: 'NON_FINITE_POLICY_REJECT' },
      memory: undefined,
    }),
  );
  shard.markInitialized();
  return shard;
}

const record = (step: number): PushRecord => ({
  trainerId: 1,
  step,
  grads: [
    {
      name: 'w',
      elementType: f32,
      offset: 0,
      content: Buffer.from(new Float32Array([1, 2]).buffer),
      shape: [],
    },
  ],
  sparse: [],
  evictions: [],
});

const values = (shard: Shard): number[] => [
  ...new Float32Array(Uint8Array.from(shard.tensors.get('w')!.bytes()).buffer),
];

describe('replay on a replica', () => {
  it("applies a forwarded push whose fate is 'apply', moving the mark and the sequence", () => {
    const shard = replica();
    replay(shard, record(1));
    expect(values(shard)).toEqual([0, -1]);
    expect(shard.marks.lastStep(1)).toBe(1);
    expect(shard.appliedSeq).toBe(1);
  });

  it('refuses a forwarded push its marks count already (a diverged replica) and changes nothing', () => {
    const shard = replica();
    shard.marks.set(1, 3);
    expect(() => replay(shard, record(3))).toThrow(
      expect.objectContaining({
        code: 'PSERVER_INVALID_ARGUMENT',
        message: expect.stringContaining('the replica holds that step already') as string,
      }) as PserverError,
    );
    expect(values(shard)).toEqual([1, 1]);
    expect(shard.appliedSeq).toBe(0);
  });
});
