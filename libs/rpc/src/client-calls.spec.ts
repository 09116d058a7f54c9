import { EventEmitter, getEventListeners } from 'node:events';
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { callClientStream, callUnary } from './client-calls';

type Callback = (err: ServiceError | null, response?: unknown) => void;

const cancelled = (): ServiceError =>
  Object.assign(new Error('1 CANCELLED: Cancelled on client'), {
    code: status.CANCELLED,
    details: 'Cancelled on client',
    metadata: new Metadata(),
  });

/** A client stream whose buffer is always full: it never drains; cancel ends the call. */
function fullStream() {
  let callback: Callback = () => undefined;
  const stream = Object.assign(new EventEmitter(), {
    writes: 0,
    ended: false,
    write: () => {
      stream.writes++;
      return false;
    },
    end: () => {
      stream.ended = true;
    },
    cancel: () => callback(cancelled()),
  });
  const method = (_m: Metadata, _o: unknown, cb: Callback) => {
    callback = cb;
    return stream;
  };
  return { stream, method: method as unknown as Parameters<typeof callClientStream>[0] };
}

describe('callClientStream', () => {
  it('lets go of the message source when the call is cancelled while its buffer is full', async () => {
    const { stream, method } = fullStream();
    let released = false;
    function* pieces(): Generator<number> {
      try {
        for (let i = 0; ; i++) yield i;
      } finally {
        released = true;
      }
    }
    const abort = new AbortController();
    const call = callClientStream(method, pieces(), { timeoutMs: 60_000, signal: abort.signal });
    await new Promise((resolve) => setImmediate(resolve));
    expect(stream.writes).toBe(1);
    abort.abort();
    await expect(call).rejects.toMatchObject({ status: status.CANCELLED });
    await new Promise((resolve) => setImmediate(resolve));
    expect(released).toBe(true);
    expect(stream.writes).toBe(1);
    expect(stream.ended).toBe(false);
    expect(stream.listenerCount('drain')).toBe(0);
    expect(getEventListeners(abort.signal, 'abort')).toHaveLength(0);
  });
});

describe('callUnary', () => {
  it('removes its abort listener when the call ends', async () => {
    const abort = new AbortController();
    const method = (_r: unknown, _m: Metadata, _o: unknown, cb: Callback) => {
      setImmediate(() => cb(null, { ok: true }));
      return { cancel: () => undefined };
    };
    await expect(
      callUnary(
        method as unknown as Parameters<typeof callUnary>[0],
        {},
        {
          timeoutMs: 1_000,
          signal: abort.signal,
        },
      ),
    ).resolves.toEqual({ ok: true });
    expect(getEventListeners(abort.signal, 'abort')).toHaveLength(0);
  });

  it('cancels at once when its signal already aborted', async () => {
    const abort = new AbortController();
    abort.abort();
    let callback: Callback = () => undefined;
    const method = (_r: unknown, _m: Metadata, _o: unknown, cb: Callback) => {
      callback = cb;
      return { cancel: () => callback(cancelled()) };
    };
    await expect(
      callUnary(
        method as unknown as Parameters<typeof callUnary>[0],
        {},
        {
          timeoutMs: 1_000,
          signal: abort.signal,
        },
      ),
    ).rejects.toMatchObject({ status: status.CANCELLED });
  });
});
