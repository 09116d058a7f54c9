import v8 from 'node:v8';

/**
 * Sets how far V8 lets the old generation grow past what the last full collection left, in
 * percent (0: V8's own choice). V8 reads it at every full collection, so it applies at run time.
 *
 * A pserver's JavaScript heap is small (15–20 MB) while data flows through the process fast,
 * mostly outside the heap (gradients in the WebAssembly arena, messages in Node's buffers). V8
 * then sets the old generation's limit barely above what is live, closer than the young
 * generation's size, and starts a full marking as soon as anything is promoted: under a stream of
 * pushes, a mark-compact every 50 ms, each costing tens of milliseconds of a core on its
 * concurrent markers: half the server's CPU per byte pushed, as measured (apps/pserver/README.md,
 * "Garbage collection"). Growing 4× between full collections makes them rare, with a heap still
 * under 100 MB.
 */
export function tuneHeap(growingPercent: number): void {
  if (growingPercent > 0) v8.setFlagsFromString(`--heap-growing-percent=${growingPercent}`);
}
