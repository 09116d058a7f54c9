import type { ElementTypeName } from '@pserver/proto';

/**
 * IEEE 754 half-precision values as their raw 16-bit patterns: JavaScript has no 16-bit float, so
 * the client carries them unchanged and the trainer converts (e.g. with `Math.f16round` where the
 * runtime has it).
 */
export class Float16Bits extends Uint16Array {}

/** bfloat16 values (the upper 16 bits of a float32) as their raw 16-bit patterns. */
export class BFloat16Bits extends Uint16Array {}

/** The typed arrays a trainer hands over and gets back, by element type. */
export type TensorArray =
  | Float32Array
  | Float64Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array
  | Float16Bits
  | BFloat16Bits;

/** The constructor of a typed array (`Float64Array`, …), to say which one a caller expects. */
export type TensorArrayType<T extends TensorArray> = abstract new (...args: never[]) => T;

/** What the client must know of a tensor to place, split and reassemble it. */
export interface TensorSpec {
  elementType: ElementTypeName;
  /** Elements of the flattened tensor. */
  length: number;
  shape: number[];
}

/** The element type of a typed array. */
export function elementTypeOf(array: TensorArray): ElementTypeName {
  if (array instanceof Float16Bits) return 'ELEMENT_TYPE_FLOAT16';
  if (array instanceof BFloat16Bits) return 'ELEMENT_TYPE_BFLOAT16';
  if (array instanceof Float32Array) return 'ELEMENT_TYPE_FLOAT32';
  if (array instanceof Float64Array) return 'ELEMENT_TYPE_FLOAT64';
  if (array instanceof Int32Array) return 'ELEMENT_TYPE_INT32';
  if (array instanceof Uint32Array) return 'ELEMENT_TYPE_UINT32';
  if (array instanceof BigInt64Array) return 'ELEMENT_TYPE_INT64';
  return 'ELEMENT_TYPE_UINT64';
}

/** A new, zeroed typed array of the element type. */
export function allocate(spec: TensorSpec): TensorArray {
  switch (spec.elementType) {
    case 'ELEMENT_TYPE_FLOAT32':
      return new Float32Array(spec.length);
    case 'ELEMENT_TYPE_FLOAT64':
      return new Float64Array(spec.length);
    case 'ELEMENT_TYPE_INT32':
      return new Int32Array(spec.length);
    case 'ELEMENT_TYPE_UINT32':
      return new Uint32Array(spec.length);
    case 'ELEMENT_TYPE_INT64':
      return new BigInt64Array(spec.length);
    case 'ELEMENT_TYPE_UINT64':
      return new BigUint64Array(spec.length);
    case 'ELEMENT_TYPE_FLOAT16':
      return new Float16Bits(spec.length);
    case 'ELEMENT_TYPE_BFLOAT16':
      return new BFloat16Bits(spec.length);
    default:
      throw new Error(`element type ${spec.elementType} is not supported by the TypeScript client`);
  }
}

/** The bytes of elements [start, end) of an array, as a view (no copy). */
export function sliceBytes(array: TensorArray, start: number, end: number): Buffer {
  const size = array.BYTES_PER_ELEMENT;
  return Buffer.from(array.buffer, array.byteOffset + start * size, (end - start) * size);
}

/** Copies `bytes` (at any alignment) into elements from `start` of `array`. */
export function writeBytes(array: TensorArray, start: number, bytes: Uint8Array): void {
  new Uint8Array(
    array.buffer,
    array.byteOffset + start * array.BYTES_PER_ELEMENT,
    bytes.byteLength,
  ).set(bytes);
}
