import { copyIntoShared } from './shared-copy';

describe('copyIntoShared', () => {
  const shared = new Uint8Array(new SharedArrayBuffer(1 << 20));
  const plain = new Uint8Array(1 << 20);
  const source = Uint8Array.from({ length: 600_000 }, (_, i) => (i * 7 + 3) & 0xff);

  it.each([
    ['shared', shared],
    ['plain', plain],
  ])(
    'copies every byte into a %s target at every pair of alignments, in and beyond one bounce',
    (_kind, memory) => {
      for (const length of [0, 1, 255, 256, 257, 4099, 300_000, 600_000 - 16]) {
        for (const from of [0, 1, 3, 8]) {
          for (const to of [0, 5, 8, 13]) {
            const target = memory.subarray(64 + to, 64 + to + length + 32);
            target.fill(0xee);
            copyIntoShared(target, 16, source.subarray(from, from + length));
            const copied = Buffer.from(target.subarray(16, 16 + length));
            expect(copied.equals(source.subarray(from, from + length))).toBe(true);
            // Nothing around it is touched.
            expect(Buffer.from(target.subarray(0, 16)).equals(Buffer.alloc(16, 0xee))).toBe(true);
            expect(Buffer.from(target.subarray(16 + length)).equals(Buffer.alloc(16, 0xee))).toBe(
              true,
            );
          }
        }
      }
    },
  );
});
