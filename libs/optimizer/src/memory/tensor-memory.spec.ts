import { TensorMemory } from './tensor-memory';

describe('TensorMemory', () => {
  it('is available on this runtime', () => {
    expect(TensorMemory.supported).toBe(true);
  });

  it('keeps earlier views valid when the memory grows', () => {
    const memory = new TensorMemory();
    const [first] = memory.allocate([5], 'all');
    first!.values.set([1, 2, 3, 4, 5]);
    // 64 MiB more: the arena grows many times over.
    const big = memory.allocate([16 * 1024 * 1024], 'all');
    expect(Array.from(first!.values)).toEqual([1, 2, 3, 4, 5]);
    expect(big[0]!.values.length).toBe(16 * 1024 * 1024);
    expect(memory.bytesReserved).toBeGreaterThanOrEqual(64 * 1024 * 1024);
    memory.free([...big, first!]);
    expect(memory.bytesInUse).toBe(0);
  });

  it('pads arrays to whole vectors with zeros, also when reusing dirty memory', () => {
    const memory = new TensorMemory();
    const [dirty] = memory.allocate([8], 'all');
    dirty!.values.fill(7);
    memory.free([dirty!]);
    const [block] = memory.allocate([5], 'padding');
    expect(block!.vectors).toBe(2);
    const padded = block!.arena.float32(block!.offset, 8);
    expect(Array.from(padded.subarray(5))).toEqual([0, 0, 0]);
  });

  it('puts the arrays of one tensor in one arena', () => {
    const memory = new TensorMemory();
    const blocks = memory.allocate([3, 3, 3], 'all');
    expect(new Set(blocks.map((b) => b.arena)).size).toBe(1);
    expect(blocks.every((b) => b.arena.holds(b.values))).toBe(true);
    expect(blocks[0]!.arena.holds(new Float32Array(3))).toBe(false);
  });
});
