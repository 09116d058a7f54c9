import { SnapshotBuffers, SnapshotPools } from './snapshot-buffers';

const mib = 1 << 20;

describe('SnapshotPools', () => {
  it('lends each buffers to one user at a time, and the largest first once given back', () => {
    const pools = new SnapshotPools();
    const a = pools.take();
    const b = pools.take();
    expect(b).not.toBe(a);
    a.take(3 * mib);
    b.take(10 * mib);
    pools.give(a);
    pools.give(b);
    // b holds more memory: the next snapshot gets it.
    expect(pools.take()).toBe(b);
    expect(pools.take()).toBe(a);
    expect(pools.take()).not.toBe(a);
  });

  it('warms the buffers the next take lends, without taking them from a user', async () => {
    const pools = new SnapshotPools();
    const held = pools.take();
    await pools.warm(5 * mib);
    const warmed = pools.take();
    expect(warmed).not.toBe(held);
    // Slabs of the default size (64 MiB) covering the bytes asked for.
    expect(warmed.retainedBytes).toBe(64 * mib);
    // A slab faulted in ahead is the one a snapshot then copies into.
    const copy = warmed.copy(Uint8Array.from([1, 2, 3]));
    expect([...copy]).toEqual([1, 2, 3]);
    expect(warmed.retainedBytes).toBe(64 * mib);
  });
});

describe('SnapshotBuffers.prefault', () => {
  it('adds the slabs that `bytes` needs beyond those it has, zeroed', async () => {
    const buffers = new SnapshotBuffers(mib);
    await buffers.prefault(2.5 * mib);
    expect(buffers.retainedBytes).toBe(3 * mib);
    await buffers.prefault(2 * mib);
    expect(buffers.retainedBytes).toBe(3 * mib);
    expect(buffers.take(16).every((byte) => byte === 0)).toBe(true);
  });
});
