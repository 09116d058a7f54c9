import { everyTrainerSteppingAfter } from './recovery-time';

describe('everyTrainerSteppingAfter', () => {
  it('is the latest first acknowledgement at or after the reference, minus the reference', () => {
    expect(
      everyTrainerSteppingAfter(
        [
          [100, 200, 5_300, 5_400],
          [150, 5_100, 5_200],
        ],
        5_000,
      ),
    ).toBe(300);
  });

  it('is 0 for trainers that stepped right at the reference, and undefined if one never did again', () => {
    expect(everyTrainerSteppingAfter([[100, 1_000, 1_020]], 1_000)).toBe(0);
    expect(everyTrainerSteppingAfter([[100, 1_020], [100]], 1_000)).toBeUndefined();
  });
});
