import { status } from '@grpc/grpc-js';
import { silentLogger } from '@pserver/logging';
import { RpcError } from '@pserver/rpc';
import { SessionKeeper, type SessionMaster } from './session-keeper';

const expired = (): RpcError =>
  new RpcError(status.NOT_FOUND, 'MASTER_SESSION_EXPIRED', 'session 7 expired', {});
const until = async (predicate: () => boolean): Promise<void> => {
  for (let i = 0; i < 500 && !predicate(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(predicate()).toBe(true);
};

function keeper(master: SessionMaster, intervalMs = 20) {
  const state = { trainerId: 7 };
  const keep = new SessionKeeper(master, {
    intervalMs,
    registration: { name: 't', observer: false },
    logger: silentLogger,
    trainerId: () => state.trainerId,
    onNewTrainerId: (id) => (state.trainerId = id),
  });
  return { keep, state };
}

describe('SessionKeeper', () => {
  it('never has two keep-alives in flight when the master answers slower than the interval', async () => {
    let inFlight = 0;
    let most = 0;
    let calls = 0;
    const { keep } = keeper({
      keepAlive: async (_id, signal) => {
        calls++;
        inFlight++;
        most = Math.max(most, inFlight);
        // Slower than the interval: only the attempt's own deadline ends it.
        await new Promise((resolve) => signal!.addEventListener('abort', resolve));
        inFlight--;
        throw new RpcError(status.CANCELLED, undefined, 'cancelled', {});
      },
      registerTrainer: async () => ({ trainerId: 8 }),
    });
    await until(() => calls >= 4);
    await keep.close();
    expect(most).toBe(1);
    expect(inFlight).toBe(0);
  });

  it('registers again under a new id when the session expired, and goes on through failures', async () => {
    const answers: (Error | undefined)[] = [expired(), new Error('master down'), undefined];
    const registrations: (Error | { trainerId: number })[] = [
      new RpcError(status.UNAVAILABLE, undefined, 'no master', {}),
      { trainerId: 9 },
    ];
    const seenIds: number[] = [];
    const { keep, state } = keeper({
      keepAlive: async (id) => {
        seenIds.push(id);
        const answer = answers.shift() ?? expired();
        if (answer) throw answer;
      },
      registerTrainer: async () => {
        const next = registrations.shift() ?? { trainerId: 10 };
        if (next instanceof Error) throw next;
        return next;
      },
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await until(() => state.trainerId === 9);
      await keep.close();
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
    expect(seenIds.slice(0, 3)).toEqual([7, 7, 7]);
  });

  it('stops at close, also in the middle of a keep-alive', async () => {
    let calls = 0;
    const { keep } = keeper(
      {
        keepAlive: (_id, signal) => {
          calls++;
          return new Promise((_, reject) =>
            signal!.addEventListener('abort', () => reject(signal!.reason)),
          );
        },
        registerTrainer: async () => ({ trainerId: 8 }),
      },
      5,
    );
    await until(() => calls === 1);
    await keep.close();
    const after = calls;
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toBe(after);
  });
});
