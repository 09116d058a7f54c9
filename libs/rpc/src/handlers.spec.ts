import { EventEmitter } from 'node:events';
import type { ServerDuplexStream, ServerWritableStream } from '@grpc/grpc-js';
import { silentLogger } from '@pserver/logging';
import { bidiStreamHandler, serverStreamHandler, type UnaryMethod } from './handlers';

/** A server stream whose client reads nothing: every write fills the buffer, 'drain' never comes. */
class StalledStream extends EventEmitter {
  readonly request = {};
  written = 0;
  ended = false;
  getDeadline = (): number => Number.POSITIVE_INFINITY;
  getPeer = (): string => 'ipv4:127.0.0.1:1';
  write(): boolean {
    this.written += 1;
    return false;
  }
  end(): void {
    this.ended = true;
  }
}

describe('serverStreamHandler', () => {
  it('ends a send that waits for drain when the call is cancelled, so the method can finish', async () => {
    const call = new StalledStream();
    let finished!: () => void;
    const reachedFinally = new Promise<void>((resolve) => (finished = resolve));
    const handler = serverStreamHandler<object, object>(
      'Watch',
      async (_request, ctx, send) => {
        try {
          while (!ctx.signal.aborted) await send({});
        } finally {
          finished();
        }
      },
      silentLogger,
    );
    handler(call as unknown as ServerWritableStream<object, object>);
    await new Promise((resolve) => setImmediate(resolve));
    expect(call.written).toBe(1);

    call.emit('cancelled');
    await reachedFinally;
    expect(call.written).toBe(1);
    expect(call.listenerCount('drain')).toBe(0);
  });
});

/** A bidi stream: requests are emitted as 'data', what the handler writes and ends is recorded. */
class DuplexStream extends EventEmitter {
  readonly written: unknown[] = [];
  readonly errors: { code: number; details: string }[] = [];
  ended = false;
  getDeadline = (): number => Number.POSITIVE_INFINITY;
  getPeer = (): string => 'ipv4:127.0.0.1:1';
  constructor() {
    super();
    this.on('error', (status: { code: number; details: string }) => this.errors.push(status));
  }
  write(message: unknown): boolean {
    this.written.push(message);
    return true;
  }
  end(): void {
    this.ended = true;
  }
}

describe('bidiStreamHandler', () => {
  type Echo = { n: number };

  /** Requests 1, 2, 3 and the half-close, through `implementation`: the call, once settled. */
  async function streamed(implementation: UnaryMethod<Echo, Echo>): Promise<DuplexStream> {
    const call = new DuplexStream();
    const handler = bidiStreamHandler<Echo, Echo>('Echo', implementation, silentLogger);
    handler(call as unknown as ServerDuplexStream<Echo, Echo>);
    for (const n of [1, 2, 3]) call.emit('data', { n });
    call.emit('end');
    await new Promise((resolve) => setTimeout(resolve, 20));
    return call;
  }

  it('answers each request once, in the order of the requests, and ends after the half-close', async () => {
    // The first request finishes last: its reply is still written first.
    const call = await streamed(async ({ n }) => {
      await new Promise((resolve) => setTimeout(resolve, n === 1 ? 10 : 0));
      return { n };
    });
    expect(call.written).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(call.ended).toBe(true);
  });

  it('ends the stream with the first error, answering nothing after it', async () => {
    const call = await streamed(({ n }) => {
      if (n === 2) throw Object.assign(new Error('not a replica'), { code: 'PSERVER_NOT_REPLICA' });
      return { n };
    });
    expect(call.written).toEqual([{ n: 1 }]);
    expect(call.errors).toEqual([expect.objectContaining({ details: 'not a replica' })]);
    expect(call.ended).toBe(false);
  });
});
