import { RowArena, rowFlags } from './row-arena';

function state(arena: RowArena) {
  return {
    rows: arena.rows,
    capacity: arena.capacity,
    chunks: arena.chunkCount,
    bytes: arena.bytes,
  };
}

describe('RowArena', () => {
  it('places row r in chunk r >>> shift at offset (r & mask) * stride', () => {
    const arena = new RowArena({ stride: 3, rowsPerChunk: 4 });
    const rows = Array.from({ length: 9 }, () => arena.allocate());
    expect(rows).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect([arena.chunkCount, arena.capacity, arena.shift, arena.mask]).toEqual([3, 12, 2, 3]);
    rows.forEach((row) => arena.view(row).set([row, row + 0.25, row + 0.5]));

    expect(arena.offset(7)).toBe(9);
    expect([...arena.chunk(1).values]).toEqual([
      4, 4.25, 4.5, 5, 5.25, 5.5, 6, 6.25, 6.5, 7, 7.25, 7.5,
    ]);
    // Views are windows on the chunk, not copies, and stop at the row's end.
    const last = arena.view(3);
    expect(last.length).toBe(3);
    last[2] = 42;
    expect(arena.chunk(0).values[11]).toBe(42);
    expect([...arena.view(4)]).toEqual([4, 4.25, 4.5]);
  });

  it('fills every new chunk before handing out its rows', () => {
    const arena = new RowArena({ stride: 2, rowsPerChunk: 8, fill: 0.5 });
    arena.allocate();
    expect(arena.chunk(0).values).toEqual(new Float32Array(16).fill(0.5));
    expect(arena.reserve(9)).toBe(true);
    expect(arena.chunk(1).values).toEqual(new Float32Array(16).fill(0.5));
  });

  it('hands out freed rows again, last freed first, before any new row', () => {
    const arena = new RowArena({ stride: 1, rowsPerChunk: 4 });
    for (let i = 0; i < 6; i++) arena.allocate();
    arena.view(4)[0] = 9;
    arena.free(1);
    arena.free(4);
    expect(arena.rows).toBe(4);
    expect(arena.isLive(4)).toBe(false);
    expect(() => arena.view(4)).toThrow(
      expect.objectContaining({ code: 'EMBEDDING_INVALID_ARGUMENT' }),
    );
    expect(() => arena.free(4)).toThrow(expect.objectContaining({ field: 'row' }));

    expect([arena.allocate(), arena.allocate(), arena.allocate()]).toEqual([4, 1, 6]);
    // A reused row keeps the old values (the caller initializes it) but none of its metadata.
    expect(arena.view(4)[0]).toBe(9);
    expect(arena.chunk(1).flags[0]).toBe(rowFlags.live);
    expect([arena.rows, arena.chunkCount]).toEqual([7, 2]);
  });

  it('keeps the id, last step, saturating count and dirty bit of each row', () => {
    const arena = new RowArena({ stride: 4, rowsPerChunk: 2 });
    const a = arena.allocate();
    const b = arena.allocate();
    const c = arena.allocate(); // the next chunk
    arena.setId(c, 0xffffffff, 0x80000000);
    arena.touch(c, 7, 3);
    arena.touch(c, 9);
    arena.touch(a, 1, 0xfffffff0);
    arena.touch(a, 2, 0x100);
    const chunk = arena.chunk(c >>> arena.shift);
    const i = c & arena.mask;
    expect([chunk.idLo[i], chunk.idHi[i], chunk.lastSeen[i], chunk.count[i]]).toEqual([
      0xffffffff, 0x80000000, 9, 4,
    ]);
    expect(chunk.flags[i]).toBe(rowFlags.live | rowFlags.dirty);
    expect(arena.chunk(0).count[a]).toBe(0xffffffff);
    expect(arena.chunk(0).flags[b]).toBe(rowFlags.live);

    // The dirty rows, each once, in the order they were first pushed; then none.
    expect([...arena.takeDirty()]).toEqual([c, a]);
    expect(chunk.flags[i]).toBe(rowFlags.live);
    expect(arena.dirtyRows).toBe(0);
    expect([...arena.takeDirty()]).toEqual([]);
    arena.free(c);
    expect(arena.allocate()).toBe(c);
    expect([chunk.idLo[i], chunk.idHi[i], chunk.lastSeen[i], chunk.count[i]]).toEqual([0, 0, 0, 0]);
  });

  it('lists the dirty rows once each, however often rows were freed, reused and pushed', () => {
    const arena = new RowArena({ stride: 1, rowsPerChunk: 8 });
    const live = new Set<number>();
    for (let k = 0; k < 8; k++) live.add(arena.allocate());
    let seed = 5;
    // 20,000 rounds of churn: a row freed and allocated again, or pushed. The log of dirty rows
    // holds each push that made a row dirty, so it is compacted many times on the way.
    for (let round = 0; round < 20_000; round++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const row = [...live][seed % live.size]!;
      if (seed % 3 === 0) {
        arena.free(row);
        live.delete(row);
        live.add(arena.allocate());
      } else arena.touch(row, round);
    }
    const dirty = [...live].filter(
      (row) => (arena.chunk(row >>> arena.shift).flags[row & arena.mask]! & rowFlags.dirty) !== 0,
    );
    expect(arena.dirtyRows).toBe(dirty.length);
    expect([...arena.takeDirty()].sort((a, b) => a - b)).toEqual(dirty.sort((a, b) => a - b));
    expect(arena.dirtyRows).toBe(0);
  });

  it('finds the dirty rows by a pass over every row once most rows are dirty', () => {
    const arena = new RowArena({ stride: 1, rowsPerChunk: 1024 });
    expect(arena.reserve(8192)).toBe(true);
    const rows = Array.from({ length: 8192 }, () => arena.allocate());
    // Every other row pushed: more than a quarter of the rows, so the log is given up.
    for (const row of rows) if (row % 2 === 1) arena.touch(row, 1);
    expect([...arena.takeDirty()]).toEqual(rows.filter((row) => row % 2 === 1));
    // And taken up again after that.
    arena.touch(6, 2);
    arena.touch(3, 2);
    expect([...arena.takeDirty()]).toEqual([6, 3]);
    arena.touch(5, 3);
    arena.clearDirty();
    expect([...arena.takeDirty()]).toEqual([]);
  });

  it('reserve fails past maxRows and changes nothing; what it grants allocate delivers', () => {
    const arena = new RowArena({ stride: 2, rowsPerChunk: 4, maxRows: 10 });
    for (let i = 0; i < 3; i++) arena.allocate();
    arena.free(0);
    const before = state(arena);

    expect(arena.reserve(9)).toBe(false); // 2 live + 9 > 10
    expect(state(arena)).toEqual(before);

    expect(arena.reserve(8)).toBe(true);
    const after = state(arena);
    expect(after.chunks).toBe(3);
    for (let i = 0; i < 8; i++) arena.allocate();
    expect(state(arena)).toEqual({ ...after, rows: 10 });
    expect(() => arena.allocate()).toThrow(
      expect.objectContaining({ code: 'EMBEDDING_CAPACITY_EXHAUSTED', field: 'RowArena' }),
    );
    expect(arena.rows).toBe(10);
  });

  it('reserve fails past maxBytes and changes nothing', () => {
    // A chunk of 4 rows of stride 2 is 4 * (8 + 17) = 100 bytes; the free list 4 bytes a row.
    const arena = new RowArena({ stride: 2, rowsPerChunk: 4, maxBytes: 250 });
    expect(arena.reserve(4)).toBe(true);
    expect(arena.bytes).toBe(116);
    const before = state(arena);
    expect(arena.reserve(9)).toBe(false);
    expect(state(arena)).toEqual(before);
    expect(arena.reserve(8)).toBe(true);
    expect(arena.bytes).toBe(232);
  });

  it('refuses a chunk size that is not a power of two, and bad strides', () => {
    expect(() => new RowArena({ stride: 4, rowsPerChunk: 6 })).toThrow(
      expect.objectContaining({ code: 'EMBEDDING_INVALID_ARGUMENT', field: 'rowsPerChunk' }),
    );
    expect(() => new RowArena({ stride: 0 })).toThrow(expect.objectContaining({ field: 'stride' }));
  });
});
