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

  it('refuses to free what it did not hand out', () => {
    const allocator = new RangeAllocator(0, 16);
    allocator.grow(64);
    expect(() => allocator.free(16)).toThrow('RangeAllocator: offset 16 is not allocated');
  });
});
