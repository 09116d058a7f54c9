import { status } from '@grpc/grpc-js';
import { silentLogger } from '@pserver/logging';
import type { RequestContext } from '@pserver/proto';
import { RpcError } from '@pserver/rpc';
import { ClientError } from './errors';
import type { ShardCalls } from './shard-calls';
import type { StepContext } from './step-context';
import type { StepPushes } from './step-pushes';
import { runStep, type StepHost } from './step-runner';
import { TableDirectory } from './tables';
import type { View } from './view';

const view: View = {
  shardCount: 1,
  blockSize: 4,
  shards: [{ index: 0, address: 'ps-0:1', epoch: 3, serving: true }],
  revision: 1,
  initialized: true,
  consistency: 'async',
};

function fakeHost(stepTimeoutMs = 60_000) {
  let step = 0;
  const closing = new AbortController();
  const host = {
    trainerId: 7,
    pass: 1,
    view,
    stepTimeoutMs,
    closingSignal: closing.signal,
    logger: silentLogger,
    calls: {} as ShardCalls,
    pushes: [] as RequestContext[],
    globalClipNorm: undefined,
    testHooks: {},
    maxMessageBytes: 64 << 20,
    learnModel: () => undefined,
    refreshes: 0,
    complete: true,
    refreshError: undefined as Error | undefined,
    nextStepNumber: () => ++step,
    spec: () => undefined,
    liveView: () => view,
    staleShard: () => undefined,
    stepClosedWithout: () => undefined,
    waitForCompleteView: async (deadline: number) => {
      if (host.complete) return true;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now())));
      return false;
    },
    refreshView: async () => {
      host.refreshes++;
      if (host.refreshError) throw host.refreshError;
    },
    track: () => () => undefined,
    tables: new TableDirectory(),
    lastStepPushes: undefined as StepPushes | undefined,
    keepStepPushes(pushes: StepPushes) {
      host.lastStepPushes = pushes;
    },
  } satisfies StepHost & Record<string, unknown>;
  return host;
}

const stale = (): ClientError => new ClientError('CLIENT_STALE_VIEW', 'shard 0 changed');

describe('runStep', () => {
  it('keeps the pushes of a step once it went through, never those of a read', async () => {
    const host = fakeHost();
    let sent: StepPushes | undefined;
    await runStep(host, async (ctx) => (sent = ctx.sent));
    expect(host.lastStepPushes).toBe(sent);
    expect(host.lastStepPushes!.identity).toEqual({ trainerId: 7, step: 1, pass: 1 });
    await runStep(host, async () => undefined, { reading: true });
    expect(host.lastStepPushes).toBe(sent);
  });

  it('gives a reading step number 0 and takes no number from the trainer’s steps', async () => {
    const host = fakeHost();
    const steps: number[] = [];
    await runStep(host, async (ctx) => steps.push(ctx.step), { reading: true });
    await runStep(host, async (ctx) => steps.push(ctx.step));
    expect(steps).toEqual([0, 1]);
  });

  it("sends rows pushed without sendGrads when the step function returns; a re-run keeps the step's identity", async () => {
    const host = fakeHost();
    host.tables.declare({ name: 'emb', dim: 1, buckets: 1 });
    (host as { calls: ShardCalls }).calls = {
      sendGrads: async (_address: string, context: RequestContext) => {
        host.pushes.push(context);
        if (host.pushes.length === 1) {
          host.trainerId = 99; // the session was registered again meanwhile
          throw new RpcError(status.ABORTED, 'PSERVER_STALE_EPOCH', 'stale epoch', {});
        }
        return {};
      },
    } as unknown as ShardCalls;
    let runs = 0;
    await runStep(host, async (ctx) => {
      runs++;
      await ctx.pushRows('emb', BigInt64Array.of(1n), Float32Array.of(0.5));
    });
    expect(runs).toBe(2);
    expect(host.pushes).toHaveLength(2);
    expect(host.pushes[1]).toEqual(host.pushes[0]);
    expect(host.pushes[0]).toMatchObject({ trainerId: 7, step: 1 });
  });

  it('keeps the id and step it began with on every run, across a re-registration', async () => {
    const host = fakeHost();
    const seen: RequestContext[] = [];
    await runStep(host, async (ctx: StepContext) => {
      seen.push(ctx.requestContext(0));
      if (seen.length === 1) {
        // The session expired meanwhile and the client registered again under a new id.
        host.trainerId = 99;
        throw stale();
      }
    });
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[0]).toMatchObject({ trainerId: 7, step: 1, pass: 1, shardEpoch: 3 });

    // The next step is the new session's: the new id, and the step numbers go on.
    await runStep(host, async (ctx) => {
      seen.push(ctx.requestContext(0));
    });
    expect(seen[2]).toMatchObject({ trainerId: 99, step: 2 });
  });

  it('runs a step again after a stale view, with a backoff and a refreshed view', async () => {
    const host = fakeHost();
    let runs = 0;
    const started = performance.now();
    const result = await runStep(host, async () => {
      if (++runs < 4) throw stale();
      return 'done';
    });
    expect(result).toBe('done');
    expect(runs).toBe(4);
    expect(host.refreshes).toBe(3);
    // Jittered backoff: waits happened, but well under a second each.
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('fails with CLIENT_STEP_FAILED only when the step deadline passes', async () => {
    const host = fakeHost(400);
    const started = performance.now();
    let runs = 0;
    const failure = await runStep(host, async () => {
      runs++;
      throw stale();
    }).catch((err: unknown) => err);
    expect(failure).toMatchObject({ code: 'CLIENT_STEP_FAILED' });
    expect((failure as ClientError).cause).toMatchObject({ code: 'CLIENT_STALE_VIEW' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(390);
    expect(runs).toBeGreaterThan(1);
  });

  it('fails with CLIENT_STEP_FAILED when no complete view comes before the deadline', async () => {
    const host = fakeHost(200);
    host.complete = false;
    let runs = 0;
    await expect(
      runStep(host, async () => {
        runs++;
      }),
    ).rejects.toMatchObject({ code: 'CLIENT_STEP_FAILED' });
    expect(runs).toBe(0);
  });

  it('throws an error that waiting cannot change at once, without another run', async () => {
    const host = fakeHost();
    const invalid = new RpcError(status.INVALID_ARGUMENT, 'PSERVER_INVALID_ARGUMENT', 'bad', {});
    let runs = 0;
    await expect(
      runStep(host, async () => {
        runs++;
        throw invalid;
      }),
    ).rejects.toBe(invalid);
    expect(runs).toBe(1);
  });

  it('throws a refusal met while refreshing the view', async () => {
    const host = fakeHost();
    host.refreshError = new RpcError(status.PERMISSION_DENIED, 'AUTH_PERMISSION_DENIED', 'no', {});
    await expect(
      runStep(host, async () => {
        throw stale();
      }),
    ).rejects.toBe(host.refreshError);
  });
});
