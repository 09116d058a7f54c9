import fc from 'fast-check';
import { niceTicks, tickLabel } from './nice-ticks';

/** The step between ticks when they are evenly spaced multiples of 1, 2, 2.5 or 5 × 10^k. */
function roundStep(ticks: number[]): number | undefined {
  const step = (ticks[1] ?? 0) - (ticks[0] ?? 0);
  if (ticks[0] !== 0 || !(step > 0)) return undefined;
  const mantissa = Number((step / 10 ** Math.floor(Math.log10(step))).toPrecision(6));
  if (![1, 2, 2.5, 5].includes(mantissa)) return undefined;
  const even = ticks.every((t, k) => Math.abs(t - k * step) <= step * 1e-9);
  return even ? step : undefined;
}

describe('niceTicks', () => {
  it('picks a round step for the maxima a report shows', () => {
    expect(niceTicks(1_279, 4)).toEqual([0, 500, 1_000, 1_500]);
    expect(niceTicks(2.41, 4)).toEqual([0, 1, 2, 3]);
    expect(niceTicks(16.3, 6)).toEqual([0, 5, 10, 15, 20]);
    expect(niceTicks(9, 4)).toEqual([0, 2.5, 5, 7.5, 10]);
    expect(niceTicks(0.3, 3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(niceTicks(0, 4)).toEqual([0]);
  });

  it('covers any maximum with at most count intervals of a round step', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1e-6, max: 1e9, noNaN: true }),
        fc.integer({ min: 2, max: 10 }),
        (max, count) => {
          const ticks = niceTicks(max, count);
          expect(roundStep(ticks)).toBeDefined();
          expect(ticks.length - 1).toBeLessThanOrEqual(count);
          expect(ticks.at(-1)).toBeGreaterThanOrEqual(max * (1 - 1e-9));
          expect(ticks.at(-2)).toBeLessThan(max);
        },
      ),
    );
  });

  it('labels ticks with thousands separators and no float noise', () => {
    expect([1_250, 2.5, 0.25, 0.3].map(tickLabel)).toEqual(['1,250', '2.5', '0.25', '0.3']);
  });
});
