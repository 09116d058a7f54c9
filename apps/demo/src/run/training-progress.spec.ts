import { TrainingProgress } from './training-progress';

const step = (pass: number, loss: number, started: number, t: number): string =>
  JSON.stringify({ event: 'step', pass, loss, samples: 10, started, t });

describe('TrainingProgress', () => {
  it('counts samples per pass and trainer, and the share of the run done', () => {
    const progress = new TrainingProgress(['a', 'b'], 2, 40);
    progress.onTrainerLine('a', JSON.stringify({ event: 'ready' }));
    progress.onTrainerLine('a', step(0, 2, 0, 10));
    progress.onTrainerLine('b', step(0, 1, 0, 20));
    progress.onTrainerLine('b', 'not an event');
    progress.onTrainerLine('c', step(0, 1, 0, 20)); // not a trainer of this run
    expect(progress.samplesIn(0)).toBe(20);
    expect(progress.fraction()).toBe(20 / 80);
    expect(progress.trainers.get('a')!.phase).toBe('training');
    expect(progress.loss).toBeCloseTo(0.95 * 2 + 0.05 * 1);
    expect(progress.samplesPerSecond(1_000, 'b', 1_000)).toBe(10);
  });

  it('tells when every trainer still training completed a step after a moment', () => {
    const progress = new TrainingProgress(['a', 'b', 'c'], 1, 100);
    progress.onTrainerLine('c', JSON.stringify({ event: 'done' }));
    progress.onTrainerLine('b', step(0, 1, 50, 90)); // before the takeover at 100
    progress.onTrainerLine('a', step(0, 1, 90, 110)); // began before it, completed after
    progress.onTrainerLine('a', step(0, 1, 110, 150));
    expect(progress.resumedAfter(100)).toBeUndefined(); // b has not stepped since
    progress.onTrainerLine('b', step(0, 1, 120, 130));
    expect(progress.resumedAfter(100)).toBe(130);
  });

  it('finds the longest time no trainer stepped, whoever stepped on either side', () => {
    const progress = new TrainingProgress(['a', 'b'], 1, 100);
    expect(progress.longestPause()).toBeUndefined();
    progress.onTrainerLine('a', step(0, 1, 0, 100));
    progress.onTrainerLine('b', step(0, 1, 0, 400));
    progress.onTrainerLine('a', step(0, 1, 0, 250)); // reported late, out of order
    progress.onTrainerLine('b', step(0, 1, 0, 1_400));
    expect(progress.longestPause()).toEqual({ ms: 1_000, from: 400 });
  });

  it('is finished when every trainer is done or failed, and the pass follows the slowest', () => {
    const progress = new TrainingProgress(['a', 'b'], 3, 10);
    progress.onTrainerLine('a', JSON.stringify({ event: 'pass over', pass: 0 }));
    expect(progress.currentPass()).toBe(0);
    progress.onTrainerLine('b', JSON.stringify({ event: 'pass over', pass: 0 }));
    expect(progress.currentPass()).toBe(1);
    progress.onTrainerLine('a', JSON.stringify({ event: 'done' }));
    expect(progress.allFinished()).toBe(false);
    progress.onTrainerLine('b', JSON.stringify({ event: 'failed', error: 'boom' }));
    expect(progress.allFinished()).toBe(true);
    expect(progress.trainers.get('b')!.error).toBe('boom');
  });
});
