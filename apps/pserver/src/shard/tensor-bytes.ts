import { elementSizes, isElementTypeName, type ElementTypeName } from '@pserver/proto';
import { PserverError } from './errors';

/** Checks an element type from the wire and names the field when it is missing or unknown. */
export function elementTypeOf(value: unknown, field: string): ElementTypeName {
  if (isElementTypeName(value)) return value;
  throw new PserverError(
    'PSERVER_INVALID_ELEMENT_TYPE',
    `${field}: element type ${String(value)} is not one of ${Object.keys(elementSizes).join(', ')}`,
  );
}

/** The element count of `bytes`, which must hold whole elements of the type. */
export function elementCount(bytes: number, elementType: ElementTypeName, field: string): number {
  const size = elementSizes[elementType];
  if (bytes % size !== 0) {
    throw new PserverError(
      'PSERVER_LENGTH_MISMATCH',
      `${field}: ${bytes} bytes is not a whole number of ${elementType} elements (${size} bytes each)`,
    );
  }
  return bytes / size;
}

/**
 * Copies little-endian bytes into a new typed array of the float type. Bytes that arrive in a
 * gRPC message sit at any offset, so a view could be misaligned: the copy is also the alignment.
 */
export function toFloatArray(
  bytes: Uint8Array,
  elementType: 'ELEMENT_TYPE_FLOAT32' | 'ELEMENT_TYPE_FLOAT64',
): Float32Array | Float64Array {
  const size = elementSizes[elementType];
  const array =
    elementType === 'ELEMENT_TYPE_FLOAT32'
      ? new Float32Array(bytes.byteLength / size)
      : new Float64Array(bytes.byteLength / size);
  new Uint8Array(array.buffer).set(bytes);
  return array;
}
