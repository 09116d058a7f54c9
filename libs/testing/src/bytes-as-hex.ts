/**
 * `value` with every byte array in it (Buffers, views of other memories) turned into its hex
 * string, recursively: decoded messages then compare by their bytes' content, whatever holds them.
 */
export function bytesAsHex(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  if (Array.isArray(value)) return value.map(bytesAsHex);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, bytesAsHex(v)]));
  return value;
}
