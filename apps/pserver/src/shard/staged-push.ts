import { copyIntoShared, type GradientBuffer } from '@pserver/optimizer';
import { bucketsOfIds, type ElementTypeName } from '@pserver/proto';
import type { AdmissionControl } from './admission';
import { PserverError } from './errors';
import type { StoredTensor } from './stored-tensor';
import type { ShardTable } from './table-spec';

/** One table's gradients in a push: the slices received, concatenated when the push completes. */
interface StagedSparse {
  table: ShardTable;
  ids: Uint8Array[];
  grads: Uint8Array[];
  /** Per slice; an empty one means 1 per id. */
  counts: Uint8Array[];
}

/** One gradient being received: its tensor, its buffer next to the tensor, bytes so far. */
interface StagedGradient {
  tensor: StoredTensor;
  buffer: GradientBuffer;
  received: number;
}

/**
 * A gradient's buffer while the push is staged, from the first place handed out or piece added:
 * where the places handed out end, and how far its bytes are final and scanned.
 */
interface GradientSlot {
  buffer: GradientBuffer;
  /** The end of the last place handed out: places never overlap. */
  placedEnd: number;
  /**
   * Bytes [0, scanned) are final and were scanned for NaN and ±Infinity as they landed
   * (`GradientBuffer.filled`); -1 once bytes below it were written again, so `check` reads the
   * whole buffer itself.
   */
  scanned: number;
}

/** Where a piece of a gradient is written as it arrives, before the push is checked. */
export interface Placement {
  readonly bytes: Uint8Array;
  /** The piece's first `byteCount` bytes are written (they are scanned now, while in cache). */
  written(byteCount: number): void;
}

/**
 * The gradients of one push, gathered before anything is applied: a unary push adds each
 * gradient whole, a streamed push adds pieces as they arrive. Every piece is checked as it comes
 * (known tensor, same type, contiguous, within bounds) and copied straight into a buffer next to
 * its tensor, so applying needs no further copy. `discard` (or a failed `complete`) frees it all.
 *
 * The data path receives a piece's bytes before the push is checked: `placeFor` says where they
 * will belong, the receiver writes them there as they arrive, and `add` later checks the piece
 * as any other and finds it already in place. Until `add` accepts it, nothing depends on those
 * bytes: a piece that turns out wrong is refused and the buffers freed, as always.
 *
 * The push's bytes count against the pserver's admission cap from the moment they are placed or
 * admitted until `discard`.
 */
export class StagedPush {
  private readonly gradients = new Map<string, StagedGradient>();
  private readonly sparse = new Map<string, StagedSparse>();
  /** Every gradient buffer this push holds, by name (they are released with it). */
  private readonly slots = new Map<string, GradientSlot>();
  private bytes = 0;
  private admitted = 0;

  constructor(
    private readonly lookup: (name: string) => StoredTensor | undefined,
    private readonly lookupTable: (name: string) => ShardTable | undefined = () => undefined,
    private readonly admission?: AdmissionControl,
  ) {}

  /**
   * Admits this push's bytes up to `total` in all: what is not admitted yet is acquired, or the
   * push is refused PSERVER_OVERLOADED (changing nothing).
   */
  admit(total: number): void {
    if (!this.admission || total <= this.admitted) return;
    this.admission.acquire(total - this.admitted);
    this.admitted = total;
  }

  /**
   * Where bytes [offset, offset + byteLength) of gradient `name` belong, if this push can stage
   * them before it is checked: a known optimizable tensor, within its length, past every place
   * handed out for it before, and admitted under the cap. Otherwise undefined: the receiver keeps
   * the bytes aside and `add` copies them.
   *
   * Places of a gradient never overlap, nor cover bytes `add` wrote or took, so each is written
   * by the one piece it was given to: a piece `add` finds in place holds its own bytes, whatever
   * else the push carries. (The receiver gives up a place when the piece turns out to be another:
   * a name or offset field after its bytes.)
   */
  placeFor(name: string, offset: number, byteLength: number): Placement | undefined {
    let slot = this.slots.get(name);
    if (slot && offset < Math.max(slot.placedEnd, this.gradients.get(name)?.received ?? 0))
      return undefined;
    if (!slot) {
      const tensor = this.lookup(name);
      if (!tensor?.optimizable || offset + byteLength > tensor.byteLength) return undefined;
      if (this.admission && !this.admission.tryAcquire(tensor.byteLength)) return undefined;
      this.admitted += tensor.byteLength;
      slot = this.newSlot(name, tensor);
    }
    const target = slot.buffer.values;
    if (offset + byteLength > target.byteLength) return undefined;
    slot.placedEnd = offset + byteLength;
    const found = slot;
    return {
      bytes: new Uint8Array(target.buffer, target.byteOffset + offset, byteLength),
      written: (byteCount) => scan(found, offset, offset + byteCount),
    };
  }

  private newSlot(name: string, tensor: StoredTensor): GradientSlot {
    const slot = { buffer: tensor.allocateGradient(), placedEnd: 0, scanned: 0 };
    this.slots.set(name, slot);
    return slot;
  }

  /** Whether the push holds anything. */
  get empty(): boolean {
    return this.gradients.size === 0 && this.sparse.size === 0;
  }

  /**
   * Adds a slice of one table's gradients (a unary push's whole `SparseGrad`, or a streamed
   * chunk's part): slices of a table concatenate in arrival order. Each slice is checked on its
   * own (whole ids, dim floats per id, a count per id or none) so that concatenation keeps ids
   * and rows together; the table checks the whole when the push is applied.
   */
  addSparse(name: string, ids: Uint8Array, grads: Uint8Array, counts: Uint8Array): void {
    let staged = this.sparse.get(name);
    if (!staged) {
      const table = this.lookupTable(name);
      if (!table)
        throw new PserverError(
          'PSERVER_UNKNOWN_TENSOR',
          `sparse ${name}: no such table on this shard`,
        );
      staged = { table, ids: [], grads: [], counts: [] };
      this.sparse.set(name, staged);
    }
    const dim = staged.table.table.dim;
    if (ids.byteLength % 8 !== 0)
      throw new PserverError(
        'PSERVER_LENGTH_MISMATCH',
        `sparse ${name}: ids: ${ids.byteLength} bytes is not a whole number of int64 ids`,
      );
    const n = ids.byteLength / 8;
    if (grads.byteLength !== n * dim * 4)
      throw new PserverError(
        'PSERVER_LENGTH_MISMATCH',
        `sparse ${name}: grads: ${grads.byteLength} bytes, ${n} ids of dim ${dim} need ${n * dim * 4}`,
      );
    if (counts.byteLength !== 0 && counts.byteLength !== n * 4)
      throw new PserverError(
        'PSERVER_LENGTH_MISMATCH',
        `sparse ${name}: counts: ${counts.byteLength} bytes, ${n} ids need ${n * 4} or none`,
      );
    // Copied: grpc-js may reuse nothing, but a streamed push outlives its chunks.
    staged.ids.push(Uint8Array.from(ids));
    staged.grads.push(Uint8Array.from(grads));
    staged.counts.push(Uint8Array.from(counts));
    this.bytes += ids.byteLength + grads.byteLength + counts.byteLength;
  }

  /** Every table's gradients, concatenated, in order of first arrival. */
  completeSparse(): {
    table: ShardTable;
    ids: Uint8Array;
    grads: Uint8Array;
    counts?: Uint8Array;
  }[] {
    return [...this.sparse.values()].map((staged) => this.completeSparseOf(staged));
  }

  private completeSparseOf({ table, ids, grads, counts }: StagedSparse): {
    table: ShardTable;
    ids: Uint8Array;
    grads: Uint8Array;
    counts?: Uint8Array;
  } {
    const withCounts = counts.some((c) => c.byteLength > 0);
    return {
      table,
      ids: concat(ids),
      grads: concat(grads),
      ...(withCounts && {
        counts: concat(
          counts.map((c, i) =>
            c.byteLength > 0
              ? c
              : new Uint8Array(new Uint32Array(ids[i]!.byteLength / 8).fill(1).buffer),
          ),
        ),
      }),
    };
  }

  /** Bytes received so far. */
  get size(): number {
    return this.bytes;
  }

  /**
   * Adds a gradient (`whole`) or a piece of one at `offset`. `shape` is the gradient's declared
   * shape: checked against the tensor's when non-empty (a streamed push declares it on the piece
   * at offset 0, so pieces further on pass `[]`).
   */
  add(
    name: string,
    elementType: ElementTypeName | undefined,
    offset: number,
    content: Uint8Array,
    shape: readonly number[],
    whole: boolean,
  ): void {
    let staged = this.gradients.get(name);
    if (!staged) {
      const tensor = this.lookup(name);
      if (!tensor)
        throw new PserverError(
          'PSERVER_UNKNOWN_TENSOR',
          `gradient ${name}: no such tensor on this shard`,
        );
      if (!tensor.optimizable) {
        throw new PserverError(
          'PSERVER_NOT_OPTIMIZABLE',
          `gradient ${name}: ${tensor.elementType} tensors are stored, not optimized`,
        );
      }
      const { buffer } = this.slots.get(name) ?? this.newSlot(name, tensor);
      staged = { tensor, buffer, received: 0 };
      this.gradients.set(name, staged);
    } else if (whole) {
      throw new PserverError(
        'PSERVER_DUPLICATE_NAME',
        `gradient ${name}: appears more than once in the push`,
      );
    }
    const { tensor } = staged;
    if (elementType !== tensor.elementType) {
      throw new PserverError(
        'PSERVER_ELEMENT_TYPE_MISMATCH',
        `gradient ${name}: element type ${String(elementType)}, the parameter is ${tensor.elementType}`,
      );
    }
    checkShape(tensor, shape);
    if (whole && content.byteLength !== tensor.byteLength) {
      throw new PserverError(
        'PSERVER_LENGTH_MISMATCH',
        `gradient ${name}: ${content.byteLength} bytes, the parameter has ${tensor.byteLength}`,
      );
    }
    if (offset !== staged.received) {
      throw new PserverError(
        'PSERVER_INVALID_STREAM',
        `gradient ${name}: piece at offset ${offset}, expected ${staged.received}`,
      );
    }
    if (offset + content.byteLength > tensor.byteLength) {
      throw new PserverError(
        'PSERVER_LENGTH_MISMATCH',
        `gradient ${name}: pieces reach byte ${offset + content.byteLength}, the parameter has ${tensor.byteLength}`,
      );
    }
    const target = staged.buffer.values;
    const at = target.byteOffset + offset;
    const slot = this.slots.get(name)!;
    const end = offset + content.byteLength;
    // Placed there as it arrived (`placeFor`): no copy needed. Bytes written over ones already
    // scanned make that scan worthless: `check` then reads the buffer itself.
    if (content.buffer !== target.buffer || content.byteOffset !== at) {
      if (offset < slot.scanned) {
        slot.scanned = -1;
        slot.buffer.filled(0);
      }
      copyIntoShared(new Uint8Array(target.buffer, at, content.byteLength), 0, content);
      // No place may be handed out over bytes written here.
      slot.placedEnd = Math.max(slot.placedEnd, end);
    }
    scan(slot, offset, end);
    staged.received += content.byteLength;
    this.bytes += content.byteLength;
  }

  /**
   * Leaves out of the push what `counted` says its slices applied already — a gradient by its
   * name, a table's rows by bucket (`<table>@<bucket>`) — as if the trainer had not sent it
   * (slices whose marks are ahead of the shard's: `MarksAhead`). Called once the push is whole.
   */
  leaveOut(counted: (slice: string) => boolean): void {
    for (const name of [...this.gradients.keys()]) {
      if (!counted(name)) continue;
      this.slots.get(name)?.buffer.release();
      this.slots.delete(name);
      this.gradients.delete(name);
    }
    for (const [name, staged] of this.sparse) {
      const { dim, buckets } = staged.table.table;
      const ids = concat(staged.ids);
      const bucket = bucketsOfIds(ids, buckets);
      const kept: number[] = [];
      for (let k = 0; k < bucket.length; k++) if (!counted(`${name}@${bucket[k]}`)) kept.push(k);
      if (kept.length === bucket.length) continue;
      if (kept.length === 0) {
        this.sparse.delete(name);
        continue;
      }
      const withCounts = staged.counts.some((c) => c.byteLength > 0);
      const grads = concat(staged.grads);
      const counts = withCounts ? this.completeSparseOf(staged).counts! : undefined;
      staged.ids = [pick(ids, kept, 8)];
      staged.grads = [pick(grads, kept, dim * 4)];
      staged.counts = [counts ? pick(counts, kept, 4) : new Uint8Array(0)];
    }
  }

  /** The complete gradients, in arrival order; throws if one is incomplete. */
  complete(): { tensor: StoredTensor; buffer: GradientBuffer }[] {
    const gradients = [...this.gradients.values()];
    for (const { tensor, received } of gradients) {
      if (received !== tensor.byteLength) {
        throw new PserverError(
          'PSERVER_INVALID_STREAM',
          `gradient ${tensor.name}: the stream ended after ${received} of ${tensor.byteLength} bytes`,
        );
      }
    }
    return gradients;
  }

  /**
   * The complete gradients, as `complete` gives them, handed over: the caller owns (and releases)
   * their buffers from now on, and `discard` no longer frees them.
   */
  detach(): { tensor: StoredTensor; buffer: GradientBuffer }[] {
    const gradients = this.complete();
    for (const { tensor } of gradients) {
      this.slots.delete(tensor.name);
      this.gradients.delete(tensor.name);
    }
    return gradients;
  }

  discard(): void {
    for (const { buffer } of this.slots.values()) buffer.release();
    this.gradients.clear();
    this.slots.clear();
    this.sparse.clear();
    this.admission?.release(this.admitted);
    this.admitted = 0;
  }
}

/**
 * Scans bytes [from, to) of a slot's buffer when they continue its scanned prefix (pieces
 * arrive in order; one placed after a piece kept aside waits for `add`).
 */
function scan(slot: GradientSlot, from: number, to: number): void {
  if (slot.scanned < 0 || from > slot.scanned || to <= slot.scanned) return;
  slot.buffer.filled(to);
  slot.scanned = to;
}

/** The items at `kept` of `bytes`, each `size` bytes. */
function pick(bytes: Uint8Array, kept: readonly number[], size: number): Uint8Array {
  const out = new Uint8Array(kept.length * size);
  kept.forEach((k, i) => out.set(bytes.subarray(k * size, (k + 1) * size), i * size));
  return out;
}

/** The bytes of `parts` one after another (the one part itself when there is one). */
export function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((total, p) => total + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

/**
 * A gradient's declared shape, when non-empty, must be its tensor's whole shape. A tensor stored
 * without a shape (a flat vector) accepts a 1-D shape: for the whole tensor one equal to its
 * element count; for a block, any 1-D shape that can hold the block, since a shard holding one
 * block does not know the whole vector's length. A dimension beyond 2^53 − 1 arrives rounded and
 * never equals a stored one (InitParam refuses those), so it is a mismatch too.
 */
function checkShape(tensor: StoredTensor, shape: readonly number[]): void {
  if (shape.length === 0) return;
  const expected = tensor.shape;
  if (expected.length > 0) {
    if (shape.length === expected.length && shape.every((d, i) => d === expected[i])) return;
  } else if (shape.length === 1) {
    const isBlock = tensor.name.includes('@');
    if (isBlock ? shape[0]! >= tensor.elements : shape[0] === tensor.elements) return;
  }
  const wanted =
    expected.length > 0
      ? `[${expected.join(', ')}]`
      : tensor.name.includes('@')
        ? `a flat vector (empty or 1-D of at least ${tensor.elements} elements)`
        : `a flat vector (empty or [${tensor.elements}])`;
  throw new PserverError(
    'PSERVER_SHAPE_MISMATCH',
    `gradient ${tensor.name}: shape [${shape.join(', ')}], the parameter's shape is ${wanted}`,
  );
}
