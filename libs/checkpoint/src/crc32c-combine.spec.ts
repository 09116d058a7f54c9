import { crc32c } from '@node-rs/crc32';
import { crc32cCombine } from './crc32c-combine';

describe('crc32cCombine', () => {
  const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, k) => (k * 131 + 7) & 0xff));

  it.each([0, 1, 3, 8, 255, 4096, 65_537, 69_999, 70_000])(
    'gives the CRC of the whole from the CRCs of a cut at byte %i',
    (cut) => {
      const first = crc32c(bytes.subarray(0, cut));
      const second = crc32c(bytes.subarray(cut));
      expect(crc32cCombine(first, second, bytes.length - cut)).toBe(crc32c(bytes));
    },
  );

  it('folds many parts in order, as the writer folds frames', () => {
    let whole = 0;
    for (let at = 0; at < bytes.length; at += 9_999) {
      const part = bytes.subarray(at, at + 9_999);
      whole = crc32cCombine(whole, crc32c(part), part.length);
    }
    expect(whole).toBe(crc32c(bytes));
  });

  it('shifts past lengths above 2^32 bytes (no 32-bit arithmetic on the length)', () => {
    // Appending 2^33 + 5 zero bytes at once or in three steps gives the same CRC: each step uses
    // other powers of x than the whole.
    const crc = 0x12345678;
    const once = crc32cCombine(crc, 0, 2 ** 33 + 5);
    const steps = crc32cCombine(crc32cCombine(crc32cCombine(crc, 0, 2 ** 32), 0, 2 ** 32), 0, 5);
    expect(once).toBe(steps);
    expect(once).not.toBe(crc32cCombine(crc, 0, 5));
  });
});
