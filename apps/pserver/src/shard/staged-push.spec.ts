import { AdmissionControl } from './admission';
import { type PserverError } from './errors';
import { Shard } from './shard';
import { StagedPush } from './staged-push';
import { StoredTensor } from './stored-tensor';

const elements = 1000;
const f32 = 'ELEMENT_TYPE_FLOAT32';

function shardWithTensor(): Shard {
  const shard = new Shard(0, 1, undefined);
  shard.put(
    StoredTensor.create({
      name: 'w',
      elementType: f32,
      shape: [],
      content: new Uint8Array(new Float32Array(elements).fill(1).buffer),
      config: { learningRate: { base: 1 }, nonFinite: 'NON_FINITE_POLICY_REJECT' },
      memory: undefined,
    }),
  );
  shard.markInitialized();
  return shard;
}

function bytes(values: Float32Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/** `w`'s values, copied. */
function valuesOf(shard: Shard): Float32Array {
  return new Float32Array(Uint8Array.from(shard.tensors.get('w')!.bytes()).buffer);
}

function pushOf(shard: Shard, admission?: AdmissionControl): StagedPush {
  return new StagedPush((name) => shard.tensors.get(name), undefined, admission);
}

describe('StagedPush placement', () => {
  it('applies a gradient written into its place as it arrived, without a copy', () => {
    const shard = shardWithTensor();
    const push = pushOf(shard);
    const gradient = new Float32Array(elements).fill(0.5);
    const place = push.placeFor('w', 0, elements * 4)!;
    // Written in three pieces, each reported as it lands.
    let start = 0;
    for (const end of [1000, 2500, elements * 4]) {
      place.bytes.set(bytes(gradient).subarray(start, end), start);
      place.written(end);
      start = end;
    }
    push.add('w', f32, 0, place.bytes, [], true);
    expect(shard.applyPush(1, 1, push).skippedNonFinite).toEqual([]);
    expect([...valuesOf(shard)]).toEqual(new Array(elements).fill(0.5));
    push.discard();
  });

  it('refuses a NaN in the last piece to land, and changes nothing', () => {
    const shard = shardWithTensor();
    const push = pushOf(shard);
    const gradient = new Float32Array(elements).fill(0.5);
    gradient[elements - 1] = Number.NaN;
    const place = push.placeFor('w', 0, elements * 4)!;
    place.bytes.set(bytes(gradient).subarray(0, 2000));
    place.written(2000);
    place.bytes.set(bytes(gradient).subarray(2000), 2000);
    place.written(elements * 4);
    push.add('w', f32, 0, place.bytes, [], true);
    expect(() => shard.applyPush(1, 1, push)).toThrow(
      expect.objectContaining({ code: 'PSERVER_NON_FINITE_GRADIENT' }) as PserverError,
    );
    expect([...valuesOf(shard)]).toEqual(new Array(elements).fill(1));
    push.discard();
  });

  it('sees a NaN written over bytes it had already scanned (a gradient sent twice in one message)', () => {
    const shard = shardWithTensor();
    const push = pushOf(shard);
    const place = push.placeFor('w', 0, elements * 4)!;
    place.bytes.set(bytes(new Float32Array(elements).fill(0.5)));
    place.written(elements * 4);
    // The message's last content for `w` (kept aside: its place was taken) holds a NaN.
    const last = new Float32Array(elements).fill(0.25);
    last[3] = Number.NaN;
    expect(push.placeFor('w', 0, elements * 4)).toBeUndefined();
    push.add('w', f32, 0, bytes(last), [], true);
    expect(() => shard.applyPush(1, 1, push)).toThrow(
      expect.objectContaining({ code: 'PSERVER_NON_FINITE_GRADIENT' }) as PserverError,
    );
    expect([...valuesOf(shard)]).toEqual(new Array(elements).fill(1));
    push.discard();
  });

  it('hands out places that never overlap, and only for known optimizable tensors within bounds', () => {
    const shard = shardWithTensor();
    const push = pushOf(shard);
    expect(push.placeFor('nope', 0, 4)).toBeUndefined();
    expect(push.placeFor('w', 0, elements * 4 + 4)).toBeUndefined();
    expect(push.placeFor('w', 0, 400)).toBeDefined();
    expect(push.placeFor('w', 200, 400)).toBeUndefined();
    expect(push.placeFor('w', 400, 400)).toBeDefined();
    push.discard();
  });

  it('counts placed bytes against the admission cap until discarded, and places nothing beyond it', () => {
    const shard = shardWithTensor();
    const admission = new AdmissionControl(elements * 4 + 100);
    const first = pushOf(shard, admission);
    expect(first.placeFor('w', 0, elements * 4)).toBeDefined();
    expect(admission.inFlight).toBe(elements * 4);
    const second = pushOf(shard, admission);
    expect(second.placeFor('w', 0, elements * 4)).toBeUndefined();
    expect(() => second.admit(elements * 4)).toThrow(
      expect.objectContaining({ code: 'PSERVER_OVERLOADED' }) as PserverError,
    );
    first.admit(elements * 4); // already admitted through its place
    expect(admission.inFlight).toBe(elements * 4);
    first.discard();
    second.discard();
    expect(admission.inFlight).toBe(0);
  });
});
