import type { GradientBuffer } from '@pserver/optimizer';
import type { ElementTypeName } from '@pserver/proto';
import { PserverError } from './errors';
import type { StoredTensor } from './stored-tensor';

/** One gradient being received: its tensor, its buffer next to the tensor, bytes so far. */
interface StagedGradient {
  tensor: StoredTensor;
  buffer: GradientBuffer;
  received: number;
}

/**
 * The gradients of one push, gathered before anything is applied: a unary push adds each
 * gradient whole, a streamed push adds pieces as they arrive. Every piece is checked as it comes
 * (known tensor, same type, contiguous, within bounds) and copied straight into a buffer next to
 * its tensor, so applying needs no further copy. `discard` (or a failed `complete`) frees it all.
 */
export class StagedPush {
  private readonly gradients = new Map<string, StagedGradient>();
  private bytes = 0;

  constructor(private readonly lookup: (name: string) => StoredTensor | undefined) {}

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
      staged = { tensor, buffer: tensor.allocateGradient(), received: 0 };
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
    new Uint8Array(target.buffer, target.byteOffset + offset, content.byteLength).set(content);
    staged.received += content.byteLength;
    this.bytes += content.byteLength;
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

  discard(): void {
    for (const { buffer } of this.gradients.values()) buffer.release();
    this.gradients.clear();
  }
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
