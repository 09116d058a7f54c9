import { EventEmitter } from 'node:events';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { silentLogger } from '@pserver/logging';
import { serverStreamHandler } from './handlers';

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
