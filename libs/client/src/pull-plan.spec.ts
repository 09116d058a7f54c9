import { planPulls } from './pull-plan';

describe('planPulls', () => {
  const block = (k: number, bytes: number) => ({ name: `t@${k}`, bytes });

  it('packs blocks in order into calls under the budget, a big one alone', () => {
    const calls = planPulls(
      [block(0, 3_000), block(1, 3_000), block(2, 9_000), block(3, 100), block(4, 100)],
      8_000,
      20_000,
    );
    expect(calls).toEqual([['t@0', 't@1'], ['t@2'], ['t@3', 't@4']]);
  });

  it('refuses a block whose reply cannot fit under the limit', () => {
    expect(() => planPulls([block(0, 100), block(1, 20_000)], 8_000, 20_000)).toThrow(
      expect.objectContaining({ code: 'CLIENT_MESSAGE_TOO_LARGE' }),
    );
  });
});
