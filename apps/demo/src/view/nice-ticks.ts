/** The steps between ticks a reader takes in at a glance, times a power of ten. */
const niceSteps = [1, 2, 2.5, 5, 10];

/**
 * Ticks for an axis from 0 to `max`: multiples of a round step (1, 2, 2.5 or 5 × 10^k), the
 * smallest step that needs no more than `count` intervals; the last tick is at or above `max`.
 */
export function niceTicks(max: number, count: number): number[] {
  if (!(max > 0) || !Number.isFinite(max)) return [0];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = niceSteps.map((s) => s * magnitude).find((s) => s >= raw * (1 - 1e-12))!;
  const intervals = Math.ceil(max / step - 1e-9);
  // toPrecision: 3 × 0.1 is 0.30000000000000004 in floating point.
  return Array.from({ length: intervals + 1 }, (_, k) => Number((k * step).toPrecision(12)));
}

/** A tick's label: `1,250`, `2.5`, `0.25`. */
export const tickLabel = (value: number): string =>
  value.toLocaleString('en-US', { maximumFractionDigits: 6 });
