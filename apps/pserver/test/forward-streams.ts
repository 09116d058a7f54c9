import type { ForwardRequest } from '@pserver/proto';
import type { OpenForwardStream } from '../src/replication/forward-batches';

/**
 * Streams to a destination that answers each batch with `answer(batch)`: the sequence number it
 * applied up to, or undefined for a batch it never answers.
 */
export function answeringStreams(
  answer: (forwards: ForwardRequest[]) => number | undefined,
): OpenForwardStream {
  return (_address, events) => ({
    write: (forwards) => {
      const seq = answer(forwards);
      if (seq !== undefined) queueMicrotask(() => events.answered(seq));
    },
    cancel: () => undefined,
  });
}

/** The last sequence number of a batch: a destination that applies every forward at once. */
export const lastSeq = (forwards: ForwardRequest[]): number => Number(forwards.at(-1)!.seq);
