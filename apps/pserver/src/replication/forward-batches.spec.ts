import { silentLogger } from '@pserver/logging';
import type { ForwardRequest } from '@pserver/proto';
import {
  ForwardBatches,
  type ForwardBatchesOptions,
  type ForwardStreamEvents,
} from './forward-batches';

const forward = (seq: number, bytes = 4): ForwardRequest => ({
  index: 0,
  primaryEpoch: 1,
  seq,
  trainerId: 1,
  step: seq,
  grads: [{ name: 'w', offset: 0, content: Buffer.alloc(bytes) }],
});

/** A destination whose streams the test drives: what each got, and its events. */
function destination() {
  const streams: { batches: number[][]; events: ForwardStreamEvents; cancelled: boolean }[] = [];
  const open: ForwardBatchesOptions['open'] = (_address, events) => {
    const stream = { batches: [] as number[][], events, cancelled: false };
    streams.push(stream);
    return {
      write: (forwards) => stream.batches.push(forwards.map((f) => Number(f.seq))),
      cancel: () => (stream.cancelled = true),
    };
  };
  return { streams, open };
}

function batches(open: ForwardBatchesOptions['open'], more: Partial<ForwardBatchesOptions> = {}) {
  const applied: number[] = [];
  const closed = new AbortController();
  const sender = new ForwardBatches({
    address: 'r:1',
    member: 'r',
    open,
    onApplied: (seq) => applied.push(seq),
    signal: closed.signal,
    logger: silentLogger,
    ...more,
  });
  return { sender, applied, closed };
}

describe('forwards in batches on a stream', () => {
  it('sends a lone forward at once, and those queued while batches are unanswered in one', () => {
    const { streams, open } = destination();
    const { sender, applied, closed } = batches(open, { maxInFlight: 2 });
    sender.push(forward(1));
    sender.push(forward(2));
    for (let seq = 3; seq <= 6; seq++) sender.push(forward(seq));
    expect(streams).toHaveLength(1);
    expect(streams[0]!.batches).toEqual([[1], [2]]);
    streams[0]!.events.answered(1);
    expect(streams[0]!.batches).toEqual([[1], [2], [3, 4, 5, 6]]);
    streams[0]!.events.answered(2);
    streams[0]!.events.answered(6);
    expect(applied).toEqual([1, 2, 6]);
    closed.abort();
    expect(streams[0]!.cancelled).toBe(true);
  });

  it('closes a batch at its count bound', () => {
    const { streams, open } = destination();
    const { sender, closed } = batches(open, { maxInFlight: 1, maxBatchForwards: 2 });
    for (let seq = 1; seq <= 4; seq++) sender.push(forward(seq));
    streams[0]!.events.answered(1);
    expect(streams[0]!.batches).toEqual([[1], [2, 3]]);
    closed.abort();
  });

  it('closes a batch at its byte bound; a larger forward goes alone', () => {
    const { streams, open } = destination();
    const { sender, closed } = batches(open, { maxInFlight: 1, maxBatchBytes: 10 });
    sender.push(forward(1));
    for (const [seq, bytes] of [
      [2, 4],
      [3, 4],
      [4, 4],
      [5, 20],
      [6, 1],
    ] as const)
      sender.push(forward(seq, bytes));
    const sent = streams[0]!.batches;
    for (let k = 0; k < 4; k++) streams[0]!.events.answered(sent.at(-1)!.at(-1)!);
    expect(sent).toEqual([[1], [2, 3], [4], [5], [6]]);
    closed.abort();
  });

  it('sends the unanswered batches again, first, on a new stream after one ends', async () => {
    const { streams, open } = destination();
    const { sender, applied, closed } = batches(open, { maxInFlight: 2 });
    sender.push(forward(1));
    sender.push(forward(2));
    sender.push(forward(3));
    streams[0]!.events.answered(1);
    streams[0]!.events.ended(new Error('UNAVAILABLE'));
    sender.push(forward(4));
    expect(streams).toHaveLength(1); // the next stream waits for the backoff (20 ms first)
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(streams).toHaveLength(2);
    expect(streams[1]!.batches).toEqual([[2, 3, 4]]);
    // Events of a stream that was replaced change nothing.
    streams[0]!.events.answered(9);
    streams[1]!.events.answered(4);
    expect(applied).toEqual([1, 4]);
    closed.abort();
    sender.push(forward(5));
    expect(streams).toHaveLength(2);
  });

  it('opens the stream again when a batch goes unanswered past the timeout', async () => {
    const { streams, open } = destination();
    const { sender, closed } = batches(open, { answerTimeoutMs: 30 });
    sender.push(forward(1));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(streams[0]!.cancelled).toBe(true);
    expect(streams[1]!.batches).toEqual([[1]]);
    closed.abort();
  });
});
