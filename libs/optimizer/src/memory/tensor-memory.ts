import type {} from '../kernels/webassembly-globals';
import {
  instantiateKernels,
  kernelsModule,
  maxMemoryPages,
  pageBytes,
  type WasmKernels,
} from '../kernels/wasm-kernels';
import { RangeAllocator, type Placement } from './allocator';
import { isShared } from './shared-copy';

/**
 * One WebAssembly memory with its own instance of the kernels. Typed-array views of it never
 * need to be looked up again: a tensor's `values`, or the place a gradient is being received
 * into, stay valid whatever is allocated after them.
 *
 * Its memory is, where it can be, a private one of the wasm32 maximum (4 GiB) from the start,
 * which never grows: the operating system gives it pages only as they are first written, and a
 * view of it is an ordinary ArrayBuffer, which Node copies into with `memmove`. Where a memory
 * that large cannot be had (address space or overcommit limits), a shared memory instead, which
 * grows in place (a shared memory's views survive its growth); copies into it go word by word
 * (`copyIntoShared`). Memory is reused after `free` but never returned to the operating system
 * (a WebAssembly memory cannot shrink).
 */
export class Arena {
  readonly memory: WebAssembly.Memory;
  readonly kernels: WasmKernels;
  /** Every buffer this memory has handed out (one per growth of a shared one), to recognise views. */
  private readonly buffers = new WeakSet<ArrayBufferLike>();
  private readonly allocator: RangeAllocator;

  constructor(kind: ArenaKind = 'private') {
    const { memory, module } = arenaMemory(kind);
    this.memory = memory;
    this.kernels = instantiateKernels(module, this.memory);
    this.buffers.add(this.memory.buffer);
    // Offset 0 is never handed out: kernels read a 0 pointer as "no such slot".
    this.allocator = new RangeAllocator(64, 64);
    this.allocator.grow(this.memory.buffer.byteLength);
  }

  get bytesReserved(): number {
    return this.memory.buffer.byteLength;
  }

  get bytesInUse(): number {
    return this.allocator.bytesInUse;
  }

  /** Whether `array` is a view of this memory (and the kernels can work on it in place). */
  holds(array: ArrayBufferView): boolean {
    return this.buffers.has(array.buffer);
  }

  /**
   * A byte offset for `bytes`, growing a shared memory when needed; undefined when there is no
   * room left.
   */
  allocate(bytes: number, placement?: Placement): number | undefined {
    const offset = this.allocator.allocate(bytes, placement);
    if (offset !== undefined) return offset;
    if (!isShared(this.memory.buffer)) return undefined;
    const pagesNow = this.memory.buffer.byteLength / pageBytes;
    const pagesNeeded = Math.ceil(this.allocator.shortfall(bytes, placement) / pageBytes);
    // Grow by at least a quarter, so that many small allocations do not grow one page at a time.
    const pages = Math.min(
      Math.max(pagesNeeded, Math.ceil(pagesNow / 4)),
      maxMemoryPages - pagesNow,
    );
    if (pages < pagesNeeded) return undefined;
    this.memory.grow(pages);
    this.buffers.add(this.memory.buffer);
    this.allocator.grow(this.memory.buffer.byteLength);
    return this.allocator.allocate(bytes, placement);
  }

  free(offset: number): void {
    this.allocator.free(offset);
  }

  float32(offset: number, length: number): Float32Array {
    return new Float32Array(this.memory.buffer, offset, length);
  }
}

/** What an arena's memory is: private (shared where it cannot be), or shared. */
export type ArenaKind = 'private' | 'shared';

/** The largest private memory there is, or a shared one that grows; and the kernels for it. */
function arenaMemory(kind: ArenaKind): { memory: WebAssembly.Memory; module: WebAssembly.Module } {
  const privateModule = kind === 'private' ? kernelsModule('private') : null;
  if (privateModule) {
    try {
      const memory = new WebAssembly.Memory({ initial: maxMemoryPages, maximum: maxMemoryPages });
      return { memory, module: privateModule };
    } catch {
      // No room for 4 GiB of address space (or strict overcommit): a shared memory grows instead.
    }
  }
  const sharedModule = kernelsModule('shared');
  if (!sharedModule)
    throw new Error('TensorMemory: this runtime lacks WebAssembly SIMD or shared memory');
  return {
    memory: new WebAssembly.Memory({ initial: 1, maximum: maxMemoryPages, shared: true }),
    module: sharedModule,
  };
}

/**
 * A float32 array in an arena, padded with zeros to a whole number of 64-byte blocks (16 floats,
 * the 4 vectors a kernel loop iteration takes).
 */
export interface Float32Block {
  readonly arena: Arena;
  readonly offset: number;
  /** The array's length (without padding). */
  readonly length: number;
  /** The number of 4-float vectors the kernels process: a multiple of 4. */
  readonly vectors: number;
  readonly values: Float32Array;
}

/**
 * Arrays of at least this many bytes are placed apart (see `streamPlacement`); smaller ones stay
 * in the caches whatever their addresses.
 */
const placedFromBytes = 256 * 1024;

/**
 * Where the `stream`-th array of one kernel call starts: at `stream` × (4 KiB + 576 bytes) modulo
 * 32 KiB, so that no two of them share a page offset or the low bits of a page number. Arrays laid
 * end to end start at multiples of their size instead, which are equal modulo large powers of two
 * when the size is one: with a tensor's arrays exactly 256 MiB apart, SGD with momentum over 64M
 * elements ran 7x slower in WebAssembly, and 2x slower in C, on a Zen 4 EPYC.
 */
export function streamPlacement(stream: number): Placement {
  return { modulus: 32 * 1024, residue: (stream * (4096 + 576)) % (32 * 1024) };
}

/**
 * Storage for float32 tensors and their optimizer slots, in as many arenas as needed (each holds
 * up to 4 GiB). The arrays of one tensor always share an arena, so one kernel call reaches them all.
 */
export class TensorMemory {
  private readonly arenas: Arena[] = [];

  /** 'shared': arenas of shared memory only, as where a private one cannot be had. */
  constructor(private readonly arenaKind: ArenaKind = 'private') {}

  /** Whether this runtime has WebAssembly SIMD (Node.js 16.4 and newer do). */
  static get supported(): boolean {
    return kernelsModule('private') !== null || kernelsModule('shared') !== null;
  }

  get bytesReserved(): number {
    return this.arenas.reduce((total, arena) => total + arena.bytesReserved, 0);
  }

  get bytesInUse(): number {
    return this.arenas.reduce((total, arena) => total + arena.bytesInUse, 0);
  }

  /**
   * Allocates one array per length, all in one arena: zero-filled when `zero` is 'all', or with
   * only the padding zeroed when the caller overwrites every element ('padding'). Large arrays
   * are placed as streams `firstStream`, `firstStream + 1`, … of one kernel call.
   */
  allocate(
    lengths: number[],
    zero: 'all' | 'padding',
    near?: Arena,
    firstStream = 0,
  ): Float32Block[] {
    const candidates = near ? [near] : [...this.arenas];
    for (const arena of candidates) {
      const blocks = this.tryAllocate(arena, lengths, zero, firstStream);
      if (blocks) return blocks;
    }
    if (near) throw new Error('TensorMemory: no room left next to the tensor (4 GiB arena full)');
    const arena = new Arena(this.arenaKind);
    this.arenas.push(arena);
    const blocks = this.tryAllocate(arena, lengths, zero, firstStream);
    if (!blocks)
      throw new Error(`TensorMemory: ${lengths.join(' + ')} floats do not fit in one 4 GiB arena`);
    return blocks;
  }

  free(blocks: readonly Float32Block[]): void {
    for (const block of blocks) block.arena.free(block.offset);
  }

  private tryAllocate(
    arena: Arena,
    lengths: number[],
    zero: 'all' | 'padding',
    firstStream: number,
  ): Float32Block[] | undefined {
    const blocks: Float32Block[] = [];
    for (const [i, length] of lengths.entries()) {
      const vectors = Math.ceil(length / 16) * 4;
      const bytes = vectors * 16;
      const offset = arena.allocate(
        bytes,
        bytes >= placedFromBytes ? streamPlacement(firstStream + i) : undefined,
      );
      if (offset === undefined) {
        for (const block of blocks) arena.free(block.offset);
        return undefined;
      }
      const padded = arena.float32(offset, vectors * 4);
      if (zero === 'all') padded.fill(0);
      else padded.fill(0, length);
      blocks.push({ arena, offset, length, vectors, values: padded.subarray(0, length) });
    }
    return blocks;
  }
}
