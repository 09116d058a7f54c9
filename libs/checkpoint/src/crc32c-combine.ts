/**
 * CRC-32C of a concatenation from the CRCs of its parts: `combine(crc(a), crc(b), b.length)` is
 * `crc(a ‖ b)`. A writer that needs each frame's own CRC (for the index) and the whole file's
 * computes the frame's once and folds it into the file's, instead of a second pass over its
 * bytes. zlib's `crc32_combine` (multiplication by x^(8·length) modulo the polynomial, with a
 * table of x^(2^k)), for the Castagnoli polynomial; a few hundred operations whatever the length.
 */
export function crc32cCombine(first: number, second: number, secondLength: number): number {
  return (multiplyModP(xPower8n(secondLength), first) ^ second) >>> 0;
}

/** The Castagnoli polynomial, bit-reflected. */
const polynomial = 0x82f63b78;

/** a(x)·b(x) modulo the polynomial, both reflected (bit 31 is x^0). */
function multiplyModP(a: number, b: number): number {
  let m = 0x80000000;
  let product = 0;
  let multiplier = b >>> 0;
  for (;;) {
    if ((a & m) !== 0) {
      product ^= multiplier;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    multiplier = multiplier & 1 ? (multiplier >>> 1) ^ polynomial : multiplier >>> 1;
  }
  return product >>> 0;
}

/** x^(2^k) modulo the polynomial, k = 0..63: enough for any length a double holds exactly. */
const powers = ((): Uint32Array => {
  const table = new Uint32Array(64);
  let p = 0x40000000; // x^1
  for (let k = 0; k < 64; k++) {
    table[k] = p;
    p = multiplyModP(p, p);
  }
  return table;
})();

/** x^(8·n) modulo the polynomial: the shift of a CRC past n bytes of zeros. */
function xPower8n(n: number): number {
  let p = 0x80000000; // x^0
  let k = 3; // 8 = 2^3
  for (let rest = n; rest > 0; rest = Math.floor(rest / 2), k++) {
    if (rest % 2 === 1) p = multiplyModP(powers[k]!, p);
  }
  return p;
}
