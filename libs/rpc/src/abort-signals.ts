/**
 * Linked abort signals and deadlines, each with the `cleanup` that frees what it registered (a
 * listener on a long-lived signal, a timer). A listener left on a client's closing signal for
 * every call that ever ran is a leak that grows with the calls; a timer left behind keeps the
 * process alive. Call `cleanup` in a `finally`.
 */

/** A signal and the function that removes the listeners or timers behind it. */
export interface SignalAndCleanup {
  readonly signal: AbortSignal;
  cleanup(): void;
}

/** A controller, and the function that unlinks it from the signals it follows. */
export interface LinkedAbortController extends SignalAndCleanup {
  readonly controller: AbortController;
}

/**
 * A controller that aborts, with the same reason, when any of `signals` aborts (at once if one
 * already has). `cleanup` removes its listeners from them; it does not abort the controller.
 */
export function createLinkedAbortController(
  ...signals: (AbortSignal | undefined)[]
): LinkedAbortController {
  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  const cleanup = (): void => {
    for (const undo of cleanups.splice(0)) undo();
  };
  for (const signal of signals) {
    if (!signal) continue;
    if (signal.aborted) {
      cleanup();
      controller.abort(signal.reason);
      break;
    }
    cleanups.push(
      onAbort(signal, (reason) => {
        cleanup();
        controller.abort(reason);
      }),
    );
  }
  return { controller, signal: controller.signal, cleanup };
}

/**
 * A signal that aborts after `timeoutMs` with `reason` (by default a `TimeoutError`
 * DOMException, as `AbortSignal.timeout` gives). No timer when `timeoutMs` is undefined or
 * infinite. `cleanup` clears the timer; the timer never keeps the process alive on its own.
 */
export function createDeadlineSignal(
  timeoutMs: number | undefined,
  reason?: () => unknown,
): SignalAndCleanup {
  const controller = new AbortController();
  if (timeoutMs === undefined || !Number.isFinite(timeoutMs))
    return { signal: controller.signal, cleanup: () => undefined };
  const timer = setTimeout(
    () =>
      controller.abort(
        reason ? reason() : new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'),
      ),
    Math.max(0, timeoutMs),
  );
  timer.unref();
  return { signal: controller.signal, cleanup: () => clearTimeout(timer) };
}

/**
 * Runs `fn(reason)` once when `signal` aborts — at once, synchronously, if it already has — and
 * returns the function that removes the listener (a no-op once it ran).
 */
export function onAbort(
  signal: AbortSignal | undefined,
  fn: (reason: unknown) => void,
): () => void {
  if (!signal) return () => undefined;
  if (signal.aborted) {
    fn(signal.reason);
    return () => undefined;
  }
  const listener = (): void => fn(signal.reason);
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}

/**
 * Resolves after `ms`, or rejects with the signal's reason when it aborts first; the timer and
 * the listener are gone either way.
 */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      unlink();
      resolve();
    }, ms);
    const unlink = onAbort(signal, (reason) => {
      clearTimeout(timer);
      reject(reason);
    });
  });
}
