/**
 * When a trainer stepped again after a fault: the acknowledgement that ends its longest pause
 * between acknowledgements in `[fromMs, untilMs]` (counting from its last acknowledgement before
 * `fromMs`). `ackTimes` is in increasing order. Undefined if it acknowledged nothing in the
 * window after that pause began.
 */
export function resumedAt(ackTimes: number[], fromMs: number, untilMs: number): number | undefined {
  let previous: number | undefined;
  let best: { gap: number; end: number } | undefined;
  for (const at of ackTimes) {
    if (at > untilMs) break;
    if (at < fromMs) {
      previous = at;
      continue;
    }
    const gap = at - (previous ?? fromMs);
    if (!best || gap > best.gap) best = { gap, end: at };
    previous = at;
  }
  return best?.end;
}

/**
 * How long after `referenceMs` (the cluster serving again) every trainer was stepping again:
 * the latest of their `resumedAt`, minus the reference; never negative (a trainer that never
 * paused past the reference counts 0). Undefined if some trainer did not step again at all.
 */
export function everyTrainerSteppingAfter(
  ackTimesByTrainer: number[][],
  window: { fromMs: number; untilMs: number },
  referenceMs: number,
): number | undefined {
  let latest = referenceMs;
  for (const ackTimes of ackTimesByTrainer) {
    const resumed = resumedAt(ackTimes, window.fromMs, window.untilMs);
    if (resumed === undefined) return undefined;
    latest = Math.max(latest, resumed);
  }
  return latest - referenceMs;
}
