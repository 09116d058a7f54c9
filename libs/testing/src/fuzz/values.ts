import fc from 'fast-check';
import { Repeated, RepeatedList } from './wire';

/** The uint64 values where arithmetic goes wrong: 32-bit, 2^53 (JS numbers) and 64-bit edges. */
export const extremeUint64s: readonly bigint[] = [
  0n,
  1n,
  2n,
  (1n << 31n) - 1n,
  1n << 31n,
  (1n << 32n) - 1n,
  1n << 32n,
  (1n << 53n) - 1n,
  1n << 53n,
  (1n << 53n) + 1n,
  (1n << 63n) - 1n,
  1n << 63n,
  (1n << 64n) - 2n,
  (1n << 64n) - 1n,
];

/** The uint32 values at the edges. */
export const extremeUint32s: readonly number[] = [0, 1, 2, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1];

/**
 * A uint64: mostly one of `favorites` (the values a real client sends: the shard's epoch, a live
 * trainer's id), else an extreme, a small number or any 64-bit value.
 */
export function uint64(favorites: readonly bigint[] = []): fc.Arbitrary<bigint> {
  const others = [
    { weight: 2, arbitrary: fc.constantFrom(...extremeUint64s) },
    { weight: 1, arbitrary: fc.bigInt(0n, 1000n) },
    { weight: 1, arbitrary: fc.bigInt(0n, (1n << 64n) - 1n) },
  ];
  return favorites.length === 0
    ? fc.oneof(...others)
    : fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...favorites) }, ...others);
}

/** A uint32, favorites first. */
export function uint32(favorites: readonly number[] = []): fc.Arbitrary<number> {
  const others = [
    { weight: 2, arbitrary: fc.constantFrom(...extremeUint32s) },
    { weight: 1, arbitrary: fc.nat(1000) },
    { weight: 1, arbitrary: fc.nat({ max: 2 ** 32 - 1 }) },
  ];
  return favorites.length === 0
    ? fc.oneof(...others)
    : fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...favorites) }, ...others);
}

/** Mostly `usual`, one time in ten a value of `other`. */
export function rarely<T, U>(other: fc.Arbitrary<T>, usual: U): fc.Arbitrary<T | U> {
  return fc.oneof({ weight: 9, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: other });
}

/** An enum's number: mostly one of `known`, else 0, an unknown value or a negative one. */
export function enumValue(known: readonly number[]): fc.Arbitrary<number> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...known) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(0, Math.max(...known) + 1, 1000, 2 ** 31 - 1, -1, -(2 ** 31)),
    },
  );
}

/** A double, mostly one a hyperparameter would have, else any (NaN, ±Infinity, -0, subnormals). */
export const anyDouble: fc.Arbitrary<number> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(0, 1e-10, 1e-8, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 1, 10),
  },
  { weight: 1, arbitrary: fc.constantFrom(-0, -1, 2, Number.MAX_VALUE, Number.MIN_VALUE, 1e308) },
  { weight: 2, arbitrary: fc.double() },
);

/** Strings no decent validator lets through, and some it must. */
const oddStrings = [
  '',
  ' ',
  '\0',
  '\uFFFD',
  '\u202E',
  'é',
  '名前',
  '🙂',
  '@',
  'a@',
  '@1',
  'a@b',
  'a@@1',
  'a@01',
  'a@-1',
  'a@1e3',
  'a@0@1',
  '../../etc/passwd',
  '*',
  '**/*',
];

/** Strings of `n` units, at and around a limit such as 1024 bytes. */
const longStrings = fc
  .record({
    unit: fc.constantFrom('x', 'é', '名', '🙂', '@', '\0'),
    times: fc.oneof(
      fc.constantFrom(255, 256, 257, 341, 342, 512, 1023, 1024, 1025),
      fc.integer({ min: 1000, max: 300_000 }),
    ),
  })
  .map(({ unit, times }) => new Repeated(unit, times));

/** A string field: mostly one of `favorites`, else odd, unicode, binary, long or huge strings. */
export function text(favorites: readonly string[] = []): fc.Arbitrary<string | Repeated> {
  const others = [
    { weight: 2, arbitrary: fc.constantFrom(...oddStrings) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 1, arbitrary: longStrings },
  ];
  return favorites.length === 0
    ? fc.oneof(...others)
    : fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...favorites) }, ...others);
}

/**
 * A repeated field: mostly a few elements, sometimes a huge list (thousands to hundreds of
 * thousands of elements: megabytes on the wire) cycling through a few `small` ones (default
 * `element`; give small ones where an element can itself be large).
 */
export function repeated<T>(
  element: fc.Arbitrary<T>,
  options: { maxLength?: number; hugeLength?: number; small?: fc.Arbitrary<T> } = {},
): fc.Arbitrary<T[] | RepeatedList<T>> {
  const { maxLength = 6, hugeLength = 200_000, small = element } = options;
  return fc.oneof(
    { weight: 30, arbitrary: fc.array(element, { maxLength }) },
    {
      weight: 1,
      arbitrary: fc
        .record({
          items: fc.array(small, { minLength: 1, maxLength: 3 }),
          length: fc.integer({ min: 1000, max: hugeLength }),
        })
        .map(({ items, length }) => new RepeatedList(items, length)),
    },
  );
}

/** Short strings: `favorites`, odd ones and a few graphemes (elements of huge lists). */
export function shortText(favorites: readonly string[] = []): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...favorites, ...oddStrings) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
  );
}
