/**
 * How long after `referenceMs` (the cluster serving again) every trainer was stepping again: for
 * each trainer its first acknowledgement at or after the reference, and of those the latest,
 * minus the reference. Undefined if some trainer acknowledged nothing after it. Each fault's
 * reference is a moment before which no step can complete (every step pushes to every shard), or
 * that trainers do not wait for (a new master leader: then the figure is near zero).
 */
export function everyTrainerSteppingAfter(
  ackTimesByTrainer: number[][],
  referenceMs: number,
): number | undefined {
  let latest = referenceMs;
  for (const ackTimes of ackTimesByTrainer) {
    const first = ackTimes.find((at) => at >= referenceMs);
    if (first === undefined) return undefined;
    latest = Math.max(latest, first);
  }
  return latest - referenceMs;
}
