import { placeTensor, type RequestContext, type Tensor } from '@pserver/proto';
import { RpcError } from '@pserver/rpc';
import { ClientError, isRetryable, isShardUnavailable, isStaleView } from './errors';
import { backoffMs, sleepFor } from './retry';
import type { CallLimits, ShardCalls } from './shard-calls';
import {
  allocate,
  elementTypeOf,
  sliceBytes,
  writeBytes,
  type TensorArray,
  type TensorArrayType,
  type TensorSpec,
} from './tensors';
import type { View } from './view';

/** What a context needs of its client. */
export interface ContextHost {
  readonly calls: ShardCalls;
  spec(name: string): TensorSpec;
  /** The live view (newer than the context's own when the cluster changed). */
  liveView(): View;
  /** Reports that the shard's epoch moved (from an ABORTED answer's trailer). */
  staleShard(index: number, epoch: number | undefined): void;
  readonly globalClipNorm: number | undefined;
  readonly testHooks: TestHooks;
}

/** Faults and pauses that tests inject into a client. */
export interface TestHooks {
  /** Drop a push's reply after the pserver applied it (the outcome looks unknown; exactly-once tests). */
  dropReply?: (shard: number, step: number) => boolean;
  /** Runs after the initializer wrote the parameters, before it finishes the init (crash tests). */
  beforeFinishInit?: () => Promise<void>;
}

/**
 * Who a step is, on every shard and on every run of it: the trainer id and step number it began
 * with, and its pass. A session that expires mid-step gives the client a new trainer id for later
 * steps; a step that began under the old id keeps it on every re-run, so a shard that applied its
 * push already answers the re-run as a duplicate instead of applying it again.
 */
export interface StepIdentity {
  readonly trainerId: number;
  readonly step: number;
  readonly pass: number;
}

/**
 * The epoch context of one run of a training step (DESIGN section 4): the view (every shard's
 * address and epoch) and the step's identity, captured when the step began, and an AbortSignal.
 * Every call made through the context is stamped with them — never with live state read at send
 * time, which is how work done in epoch 6 once went out labelled 7. When the cluster's view changes
 * for a shard this step uses, the client aborts the context: its calls end with a stale-view error
 * and `step()` runs the step again with a fresh context (and the same identity).
 */
export class StepContext {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly host: ContextHost,
    /** The view the step runs under (a snapshot). */
    readonly view: View,
    private readonly identity: StepIdentity,
    /** When the step must be over (`Date.now()` milliseconds); every call's deadline is capped by it. */
    readonly deadline: number,
  ) {
    this.timer = setTimeout(
      () =>
        this.abort(
          new ClientError('CLIENT_DEADLINE_EXCEEDED', `step ${identity.step}: past its deadline`),
        ),
      Math.max(0, deadline - Date.now()),
    );
    this.timer.unref();
  }

  /** The trainer id the step began with (the same on every run, whatever the session does). */
  get trainerId(): number {
    return this.identity.trainerId;
  }

  /** The step number: the same on every run of the step. */
  get step(): number {
    return this.identity.step;
  }

  /** The dataset pass the step belongs to. */
  get pass(): number {
    return this.identity.pass;
  }

  /** The signal and deadline every call of the step carries. */
  get limits(): CallLimits {
    return { signal: this.signal, deadline: this.deadline };
  }

  /** Ends the context once its step is over. */
  close(): void {
    clearTimeout(this.timer);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Ends the context: its calls in flight are cancelled. */
  abort(reason: unknown): void {
    this.controller.abort(reason);
  }

  /** Whether the context's view of `shards` differs from `view`. */
  usesChanged(changed: number[]): boolean {
    return changed.some((index) => index < this.view.shards.length);
  }

  /**
   * The current values of whole tensors: blocks fetched from their shards in parallel (one call per
   * shard) and reassembled. Tensors must have been declared by `initParams`. Given `as` (e.g.
   * `Float64Array`), every tensor must be of that type, and the result is typed so.
   */
  async getParams<N extends string, T extends TensorArray = TensorArray>(
    names: readonly N[],
    as?: TensorArrayType<T>,
  ): Promise<Record<N, T>> {
    const out = {} as Record<N, T>;
    const byShard = new Map<number, { block: string; tensor: N; start: number }[]>();
    for (const name of names) {
      const spec = this.host.spec(name);
      const values = allocate(spec);
      if (as && !(values instanceof as))
        throw new ClientError(
          'CLIENT_UNKNOWN_TENSOR',
          `tensor ${name}: holds ${spec.elementType}, not ${as.name}`,
        );
      out[name] = values as T;
      for (const block of placeTensor(
        name,
        spec.length,
        this.view.blockSize,
        this.view.shardCount,
      )) {
        const list = byShard.get(block.shard) ?? [];
        list.push({ block: block.name, tensor: name, start: block.start });
        byShard.set(block.shard, list);
      }
    }
    await Promise.all(
      [...byShard].map(async ([shard, blocks]) => {
        const reply = await this.withRetries(shard, (address, context) =>
          this.host.calls.getParams(
            address,
            context,
            blocks.map((b) => b.block),
            this.limits,
          ),
        );
        reply.params.forEach((param, i) =>
          writeBytes(out[blocks[i]!.tensor], blocks[i]!.start, param.content),
        );
      }),
    );
    return out;
  }

  /**
   * Pushes the step's gradients: clipped by global norm if configured, split into blocks, and sent
   * as one push per shard (in parallel), each retried with the same step until it is known applied
   * — a retry of a push that was applied is acknowledged as a duplicate.
   */
  async sendGrads(grads: Record<string, TensorArray>): Promise<void> {
    const scaled = this.clipped(grads);
    const byShard = new Map<number, Tensor[]>();
    for (const [name, values] of Object.entries(scaled)) {
      const spec = this.host.spec(name);
      if (values.length !== spec.length) {
        throw new ClientError(
          'CLIENT_UNKNOWN_TENSOR',
          `gradient ${name}: ${values.length} elements, the tensor has ${spec.length}`,
        );
      }
      for (const block of placeTensor(
        name,
        spec.length,
        this.view.blockSize,
        this.view.shardCount,
      )) {
        const list = byShard.get(block.shard) ?? [];
        list.push({
          name: block.name,
          elementType: elementTypeOf(values),
          content: sliceBytes(values, block.start, block.end),
        });
        byShard.set(block.shard, list);
      }
    }
    await Promise.all(
      [...byShard].map(([shard, tensors]) =>
        this.withRetries(shard, async (address, context) => {
          const reply = await this.host.calls.sendGrads(address, context, tensors, this.limits);
          if (this.host.testHooks.dropReply?.(shard, this.step)) {
            throw new RpcError(14, undefined, 'test fault: the reply was lost', {});
          }
          return reply;
        }),
      ),
    );
  }

  /** The request context of a call to `shard`: the context's own view and the step's identity. */
  requestContext(shard: number): RequestContext {
    return {
      trainerId: this.trainerId,
      pass: this.pass,
      step: this.step,
      shardEpoch: this.view.shards[shard]?.epoch ?? 0,
    };
  }

  /**
   * Runs a call to `shard`, retrying while its outcome is unknown (connection lost, deadline), the
   * pserver is busy (RESOURCE_EXHAUSTED: after its retry hint) or the shard is not served at the
   * address for now (recovering, fenced, shutting down: until it serves or a new view aborts the
   * context). Retries back off with jitter and end with the step's deadline. If the shard's epoch
   * moved meanwhile, the step is stale and ends.
   */
  async withRetries<T>(
    shard: number,
    call: (address: string, context: RequestContext) => Promise<T>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      this.throwIfStale(shard);
      const route = this.view.shards[shard]!;
      try {
        return await call(route.address, this.requestContext(shard));
      } catch (err) {
        if (this.signal.aborted) throw this.staleError(this.signal.reason);
        if (isStaleView(err)) {
          this.host.staleShard(shard, err instanceof RpcError ? err.facts.shardEpoch : undefined);
          throw this.staleError(err);
        }
        if (!isRetryable(err) && !isShardUnavailable(err)) throw err;
        const hint = err instanceof RpcError ? err.facts.retryAfterMs : undefined;
        await sleepFor(hint ?? backoffMs(attempt), this.signal).catch((abort: unknown) => {
          throw this.staleError(abort);
        });
      }
    }
  }

  private throwIfStale(shard: number): void {
    if (this.signal.aborted) throw this.staleError(this.signal.reason);
    const live = this.host.liveView().shards[shard];
    const mine = this.view.shards[shard];
    if (!mine || !live || live.epoch !== mine.epoch || mine.epoch === 0) {
      throw new ClientError(
        'CLIENT_STALE_VIEW',
        `shard ${shard}: the view changed since the step began`,
      );
    }
  }

  private staleError(cause: unknown): ClientError {
    return cause instanceof ClientError
      ? cause
      : new ClientError('CLIENT_STALE_VIEW', 'the step must run again under a fresh view', {
          cause,
        });
  }

  private clipped(grads: Record<string, TensorArray>): Record<string, TensorArray> {
    const bound = this.host.globalClipNorm;
    if (bound === undefined) return grads;
    let squares = 0;
    for (const values of Object.values(grads)) {
      if (values instanceof Float32Array || values instanceof Float64Array)
        for (const x of values) squares += x * x;
    }
    const norm = Math.sqrt(squares);
    if (!(norm > bound)) return grads;
    const scale = bound / norm;
    return Object.fromEntries(
      Object.entries(grads).map(([name, values]) => [
        name,
        values instanceof Float32Array || values instanceof Float64Array
          ? values.map((x) => x * scale)
          : values,
      ]),
    );
  }
}
