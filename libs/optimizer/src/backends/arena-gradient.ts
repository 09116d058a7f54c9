import type { Float32Block } from '../memory/tensor-memory';
import { checkFilledEnd, type GradientBuffer } from './backend';

/**
 * A gradient buffer in a tensor's arena. `filled` scans each 64-byte block for NaN and ±Infinity
 * once it holds its final bytes: a gradient arriving in network chunks is scanned piece by piece
 * while each piece is in the cache, instead of in a pass over the whole buffer before the update.
 */
export class ArenaGradient implements GradientBuffer {
  /** Bytes declared final by `filled`. */
  private filledTo = 0;
  /** Bytes scanned: whole 64-byte blocks, or the whole padded array once filled to the end. */
  private scannedTo = 0;
  private sawNonFinite = false;
  private released = false;

  constructor(
    readonly block: Float32Block,
    private readonly free: (gradient: ArenaGradient) => void,
  ) {}

  get values(): Float32Array {
    return this.block.values;
  }

  filled(byteEnd: number): void {
    const { values, vectors, offset, arena } = this.block;
    checkFilledEnd(byteEnd, values.byteLength);
    if (byteEnd <= this.filledTo) this.forget();
    this.filledTo = byteEnd;
    // The padding after the last element is zero, so the last block can be scanned whole.
    const scanTo = byteEnd === values.byteLength ? vectors * 16 : byteEnd - (byteEnd % 64);
    if (scanTo <= this.scannedTo) return;
    if (!this.sawNonFinite) {
      const n4 = (scanTo - this.scannedTo) / 16;
      this.sawNonFinite = arena.kernels.nonFinite(offset + this.scannedTo, n4) !== 0;
    }
    this.scannedTo = scanTo;
  }

  /**
   * Whether the buffer holds a NaN or ±Infinity, once `filled` has declared all of it final;
   * undefined until then.
   */
  get verdict(): boolean | undefined {
    return this.filledTo === this.block.values.byteLength ? this.sawNonFinite : undefined;
  }

  /** Drops what `filled` saw: the next filling starts from byte 0. */
  forget(): void {
    this.filledTo = 0;
    this.scannedTo = 0;
    this.sawNonFinite = false;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.free(this);
  }

  /** Hands a released buffer out again, as new (its padding is still zero). */
  reuse(): void {
    this.released = false;
    this.forget();
  }
}
