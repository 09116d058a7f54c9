import { streamPlacement, TensorMemory } from './tensor-memory';

describe('TensorMemory', () => {
  it('is available on this runtime', () => {
    expect(TensorMemory.supported).toBe(true);
  });

  it('gives its arenas a private memory that never grows, ordinary array buffers', () => {
    const memory = new TensorMemory();
    const [block] = memory.allocate([5], 'all');
    // (By tag: the test runs in another realm than the module's.)
    expect(Object.prototype.toString.call(block!.values.buffer)).toBe('[object ArrayBuffer]');
    const before = block!.values.buffer;
    memory.allocate([16 * 1024 * 1024], 'all');
    expect(block!.arena.memory.buffer).toBe(before);
  });

  it.each(['private', 'shared'] as const)(
    'keeps earlier views valid as more is allocated (%s arenas)',
    (kind) => {
      const memory = new TensorMemory(kind);
      const [first] = memory.allocate([5], 'all');
      first!.values.set([1, 2, 3, 4, 5]);
      // 64 MiB more: the arena grows many times over.
      const big = memory.allocate([16 * 1024 * 1024], 'all');
      expect(Array.from(first!.values)).toEqual([1, 2, 3, 4, 5]);
      expect(big[0]!.values.length).toBe(16 * 1024 * 1024);
      expect(memory.bytesReserved).toBeGreaterThanOrEqual(64 * 1024 * 1024);
      memory.free([...big, first!]);
      expect(memory.bytesInUse).toBe(0);
    },
  );

  it('pads arrays to whole 64-byte blocks with zeros, also when reusing dirty memory', () => {
    const memory = new TensorMemory();
    const [dirty] = memory.allocate([32], 'all');
    dirty!.values.fill(7);
    memory.free([dirty!]);
    const [block] = memory.allocate([5], 'padding');
    expect(block!.offset).toBe(dirty!.offset);
    // 16 floats: the four vectors a kernel loop iteration takes.
    expect(block!.vectors).toBe(4);
    const padded = block!.arena.float32(block!.offset, 16);
    expect(Array.from(padded.subarray(5))).toEqual(new Array(11).fill(0));
  });

  it('starts the large arrays of one kernel call at distinct residues modulo 32 KiB', () => {
    const memory = new TensorMemory();
    const elements = 1024 * 1024;
    const tensor = memory.allocate([elements, elements, elements], 'all');
    const [gradient] = memory.allocate([elements], 'padding', tensor[0]!.arena, 3);
    const blocks = [...tensor, gradient!];
    expect(blocks.map((b) => b.offset % 32768)).toEqual(
      [0, 1, 2, 3].map((stream) => streamPlacement(stream).residue),
    );
    // No two in the same cache set or at the same page offset: 576-byte steps modulo 4 KiB.
    expect(new Set(blocks.map((b) => b.offset % 4096)).size).toBe(4);
    for (const [i, b] of blocks.entries()) {
      if (i > 0) expect(b.offset).toBeGreaterThanOrEqual(blocks[i - 1]!.offset + elements * 4);
    }
    memory.free(blocks);
    expect(memory.bytesInUse).toBe(0);
  });

  it('packs small arrays end to end', () => {
    const memory = new TensorMemory();
    const [a, b] = memory.allocate([256, 256], 'all');
    expect(b!.offset - a!.offset).toBe(1024);
  });

  it('puts the arrays of one tensor in one arena', () => {
    const memory = new TensorMemory();
    const blocks = memory.allocate([3, 3, 3], 'all');
    expect(new Set(blocks.map((b) => b.arena)).size).toBe(1);
    expect(blocks.every((b) => b.arena.holds(b.values))).toBe(true);
    expect(blocks[0]!.arena.holds(new Float32Array(3))).toBe(false);
  });
});
