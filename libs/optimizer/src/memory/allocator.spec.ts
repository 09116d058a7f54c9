import { RangeAllocator } from './allocator';

describe('RangeAllocator', () => {
  it('hands out aligned ranges from its start and asks to grow when full', () => {
    const allocator = new RangeAllocator(64, 64);
    allocator.grow(1024);
    expect(allocator.allocate(10)).toBe(64);
    expect(allocator.allocate(100)).toBe(128);
    expect(allocator.allocate(1000)).toBeUndefined();
    expect(allocator.bytesInUse).toBe(64 + 128);
  });

  it('reuses freed ranges and merges neighbours back into one', () => {
    const allocator = new RangeAllocator(0, 16);
    allocator.grow(160);
    const [a, b, c] = [allocator.allocate(48), allocator.allocate(48), allocator.allocate(48)];
    expect([a, b, c]).toEqual([0, 48, 96]);
    allocator.free(b!);
    expect(allocator.allocate(32)).toBe(48);
    allocator.free(48);
    allocator.free(a!);
    allocator.free(c!);
    expect(allocator.bytesInUse).toBe(0);
    expect(allocator.allocate(160)).toBe(0);
  });

  it('counts a free range at the end towards what a growth must add', () => {
    const allocator = new RangeAllocator(0, 16);
    allocator.grow(100 * 16);
    allocator.allocate(90 * 16);
    expect(allocator.shortfall(20 * 16)).toBe(10 * 16);
    allocator.grow(110 * 16);
    expect(allocator.allocate(20 * 16)).toBe(90 * 16);
  });

  it('places a range at a residue, leaving the bytes it skipped free', () => {
    const allocator = new RangeAllocator(64, 64);
    allocator.grow(64 * 1024);
    const placement = { modulus: 4096, residue: 576 };
    expect(allocator.allocate(1000, placement)).toBe(576);
    expect(allocator.allocate(1000, placement)).toBe(4096 + 576);
    // The skipped [64, 576) serves a small request; [1600, 4672) a larger one.
    expect(allocator.allocate(512)).toBe(64);
    expect(allocator.allocate(2048)).toBe(1600);
    expect(allocator.bytesInUse).toBe(1024 + 1024 + 512 + 2048);
  });

  it('asks to grow by enough to reach a placement', () => {
    const allocator = new RangeAllocator(0, 64);
    allocator.grow(4096);
    allocator.allocate(4000);
    const placement = { modulus: 4096, residue: 1024 };
    const shortfall = allocator.shortfall(4096, placement);
    allocator.grow(4096 + shortfall);
    expect(allocator.allocate(4096, placement)).toBe(4096 + 1024);
  });

  it('refuses to free what it did not hand out', () => {
    const allocator = new RangeAllocator(0, 16);
    allocator.grow(64);
    expect(() => allocator.free(16)).toThrow('RangeAllocator: offset 16 is not allocated');
  });
});
