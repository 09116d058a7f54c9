import { setMaxListeners } from 'node:events';
import {
  placeTensor,
  type PushOutcome,
  type RequestContext,
  type SendGradsResponse__Output,
  type Tensor,
} from '@pserver/proto';
import {
  backoffPolicies,
  createDeadlineSignal,
  createLinkedAbortController,
  retry,
  RpcError,
  type LinkedAbortController,
  type SignalAndCleanup,
} from '@pserver/rpc';
import {
  asMessageTooLarge,
  ClientError,
  isResendStep,
  isRetryable,
  isShardUnavailable,
  isStale,
} from './errors';
import { clipByGlobalNorm } from './global-clip';
import { assembleModel, type ListedParam } from './model-listing';
import { planPulls, rowsPerCall } from './pull-plan';
import type { CallLimits, ShardCalls } from './shard-calls';
import { StepPushes } from './step-pushes';
import {
  checkRows,
  distinctIds,
  groupByShard,
  idWords,
  pickIds,
  RowStage,
  scatterRows,
} from './sparse-rows';
import type { TableDirectory, TableLayout } from './tables';
import type { Logger } from '@pserver/logging';
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

/** A gradient as a step pushes it: values, or values with the shape the trainer computed. */
export type Gradient = TensorArray | { values: TensorArray; shape: readonly number[] };

/** What became of a step's push on each shard it went to. */
export interface PushReport {
  shards: {
    shard: number;
    /** Applied, accumulated (SYNC), a duplicate (a retry), or dropped late (SYNC backups). */
    outcome: PushOutcome;
    /** The shard's version after the push (SYNC: its steps closed). */
    version: number;
  }[];
}

/** Options of `sendGrads`. */
export interface PushOptions {
  /**
   * The examples the gradients came from: in SYNC the push's weight in the step's mean (default
   * 1). A trainer whose data ran out calls `skip()` instead.
   */
  sampleCount?: number;
}

/** What a context needs of its client. */
export interface ContextHost {
  readonly calls: ShardCalls;
  /** The tensor as initialized or listed; undefined when the client does not know it. */
  spec(name: string): TensorSpec | undefined;
  /** Records the model as the shards listed it. */
  learnModel(model: ReadonlyMap<string, ListedParam>): void;
  /** The tables the client knows, and their bucket → shard arrays. */
  readonly tables: TableDirectory;
  /** The client's gRPC message limit: pulls are split to stay well below it. */
  readonly maxMessageBytes: number;
  /** The live view (newer than the context's own when the cluster changed). */
  liveView(): View;
  /** Reports that the shard's epoch moved (from an ABORTED answer's trailer). */
  staleShard(index: number, epoch: number | undefined): void;
  /**
   * SYNC: a push of the step came too late for it somewhere, and every shard has closed at least
   * `closedSteps`: later steps start after it.
   */
  stepClosedWithout(closedSteps: number): void;
  /** SYNC: the pushes of the trainer's last step that went through on every shard. */
  readonly lastStepPushes: StepPushes | undefined;
  readonly logger: Logger;
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
  private readonly deadlineSignal: SignalAndCleanup;
  private readonly linked: LinkedAbortController;
  /** Row gradients given to `pushRows`, by table, until the step's push takes them. */
  private readonly staged = new RowStage();
  /** Whether the step's push went out (rows given later could not join it). */
  private pushed = false;
  /** The shards the step pushed to, and the version each answered. */
  private readonly pushedTo = new Map<number, number>();
  /** Whether a shard answered DROPPED_LATE: its step closed without this trainer. */
  private droppedLate = false;
  /** SYNC: what the step sent to each shard, kept once the step is done (`lastStepPushes`). */
  readonly sent: StepPushes;

  constructor(
    private readonly host: ContextHost,
    /** The view the step runs under (a snapshot). */
    readonly view: View,
    private readonly identity: StepIdentity,
    /** When the step must be over (`Date.now()` milliseconds); every call's deadline is capped by it. */
    readonly deadline: number,
  ) {
    this.deadlineSignal = createDeadlineSignal(
      Math.max(0, deadline - Date.now()),
      () => new ClientError('CLIENT_DEADLINE_EXCEEDED', `step ${identity.step}: past its deadline`),
    );
    this.linked = createLinkedAbortController(this.deadlineSignal.signal);
    // Every call of the step listens to it while it runs: a step's calls in flight (one per shard,
    // or per block while a model is initialized) are many, and none of them is a leak.
    setMaxListeners(0, this.linked.signal);
    this.sent = new StepPushes(identity, view.shardCount);
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
    this.deadlineSignal.cleanup();
    this.linked.cleanup();
  }

  get signal(): AbortSignal {
    return this.linked.signal;
  }

  /** Ends the context: its calls in flight are cancelled. */
  abort(reason: unknown): void {
    this.linked.controller.abort(reason);
  }

  /** Whether the context's view of `shards` differs from `view`. */
  usesChanged(changed: number[]): boolean {
    return changed.some((index) => index < this.view.shards.length);
  }

  /**
   * The current values of whole tensors: blocks fetched from their shards in parallel and
   * reassembled. A shard's blocks are read in calls whose replies stay under half the message
   * limit (a block over the limit itself: CLIENT_MESSAGE_TOO_LARGE). A tensor the client does not
   * know yet (it never initialized the model) is learned by listing the model first. Given `as`
   * (e.g. `Float64Array`), every tensor must be of that type, and the result is typed so.
   */
  async getParams<N extends string, T extends TensorArray = TensorArray>(
    names: readonly N[],
    as?: TensorArrayType<T>,
  ): Promise<Record<N, T>> {
    await this.knowAll(names);
    const out = {} as Record<N, T>;
    const byShard = new Map<
      number,
      { block: string; tensor: N; start: number; elements: number; bytes: number }[]
    >();
    for (const name of names) {
      const spec = this.requireSpec(name);
      const values = allocate(spec);
      if (as && !(values instanceof as))
        throw new ClientError(
          'CLIENT_SHAPE_MISMATCH',
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
        const elements = block.end - block.start;
        list.push({
          block: block.name,
          tensor: name,
          start: block.start,
          elements,
          bytes: elements * values.BYTES_PER_ELEMENT,
        });
        byShard.set(block.shard, list);
      }
    }
    const limit = this.host.maxMessageBytes;
    const plans = [...byShard].map(([shard, blocks]) => {
      const calls = planPulls(
        blocks.map((b) => ({ name: b.block, bytes: b.bytes })),
        Math.floor(limit / 2),
        limit,
      );
      return { shard, blocks: new Map(blocks.map((b) => [b.block, b])), calls };
    });
    await Promise.all(
      plans.map(async ({ shard, blocks, calls }) => {
        // One shard's calls one after another: at most one reply per shard in memory at once.
        for (const names of calls) {
          const reply = await this.withRetries(shard, (address, context) =>
            this.host.calls.getParams(address, context, names, this.limits),
          );
          reply.params.forEach((param, i) => {
            const wanted = blocks.get(param.name) ?? blocks.get(names[i]!)!;
            if (param.content.byteLength !== wanted.bytes)
              throw new ClientError(
                'CLIENT_SHAPE_MISMATCH',
                `tensor ${wanted.tensor}: block ${wanted.block} expected ${wanted.bytes} bytes ` +
                  `(${wanted.elements} elements), the shard holds ${param.content.byteLength}`,
              );
            writeBytes(out[wanted.tensor], wanted.start, param.content);
          });
        }
      }),
    );
    return out;
  }

  /**
   * The model as the shards hold it: ListParams on every shard, blocks reassembled into whole
   * tensors (element type, shape, length, resolved optimizer config).
   */
  async listParams(): Promise<Map<string, ListedParam>> {
    const replies = await Promise.all(
      this.view.shards.map((s) =>
        this.withRetries(s.index, (address, context) =>
          this.host.calls.listParams(address, context, this.limits),
        ),
      ),
    );
    const model = assembleModel(
      replies.flatMap((r) => r.params),
      this.view.blockSize,
    );
    this.host.learnModel(model);
    this.host.tables.learn(replies.flatMap((r) => r.tables ?? []));
    return model;
  }

  /**
   * The rows of `ids` in table `table`, `ids.length × dim` values in the order of `ids`
   * (duplicates included). Each distinct id is read once: the ids are grouped by shard (bucket,
   * then the view's bucket → shard array), one GetRows per shard in parallel (split into calls
   * whose replies stay under half the message limit, one after another per shard), and the rows
   * scattered back. An id without a row reads as the table's `pullMissing` says (its init value
   * by default). A table the client does not know is learned by listing the model first.
   */
  async lookup(table: string, ids: BigInt64Array): Promise<Float32Array> {
    const layout = await this.knowTable(table);
    if (!(ids instanceof BigInt64Array))
      throw new ClientError(
        'CLIENT_SHAPE_MISMATCH',
        `lookup of table ${table}: ids must be a BigInt64Array`,
      );
    const { dim } = layout;
    const distinct = distinctIds(idWords(ids));
    const groups = groupByShard(
      distinct.words,
      layout,
      this.host.tables.shardsOf(layout, this.view.shardCount),
    );
    const rows = new Float32Array(distinct.count * dim);
    const rowBytes = dim * 4;
    const target = new Uint8Array(rows.buffer);
    const perCall = rowsPerCall(dim, Math.floor(this.host.maxMessageBytes / 2));
    await Promise.all(
      [...groups].map(async ([shard, indices]) => {
        const shardIds = new Uint8Array(pickIds(distinct.words, indices).buffer);
        for (let start = 0; start < indices.length; start += perCall) {
          const end = Math.min(indices.length, start + perCall);
          const reply = await this.withRetries(shard, (address, context) =>
            this.host.calls.getRows(
              address,
              context,
              table,
              shardIds.subarray(start * 8, end * 8),
              this.limits,
            ),
          );
          const values = reply.values;
          if (values.byteLength !== (end - start) * rowBytes)
            throw new ClientError(
              'CLIENT_SHAPE_MISMATCH',
              `table ${table}: shard ${shard} answered ${values.byteLength} bytes for ` +
                `${end - start} rows of dim ${dim}`,
            );
          for (let j = start; j < end; j++) {
            const from = (j - start) * rowBytes;
            target.set(values.subarray(from, from + rowBytes), indices[j]! * rowBytes);
          }
        }
      }),
    );
    return scatterRows(distinct, rows, dim);
  }

  /**
   * Adds row gradients of table `table` to the step's push: `grads` holds `ids.length × dim`
   * values, row i for `ids[i]`; `counts`, if given, the occurrences of each id in the batch (the
   * table's admission counts them; 1 each otherwise). Lengths are checked at once
   * (CLIENT_SHAPE_MISMATCH); the arrays are copied. Duplicate ids, within a call and across
   * calls, are summed in order of first appearance (float32 arithmetic). The rows go out with the
   * step's push — in the same SendGrads as `sendGrads`'s dense gradients for each shard, or by
   * themselves when the step function returns — so a shard applies a step's dense and sparse
   * gradients together, once. Call it before `sendGrads`.
   */
  async pushRows(
    table: string,
    ids: BigInt64Array,
    grads: Float32Array,
    counts?: Uint32Array,
  ): Promise<void> {
    const layout = await this.knowTable(table);
    checkRows(layout, { ids, grads, counts });
    if (this.pushed)
      throw new ClientError(
        'CLIENT_STEP_FAILED',
        `step ${this.step}: rows of table ${table} given after the step's push was sent ` +
          `(a second push of the step would be a duplicate): call pushRows before sendGrads`,
      );
    this.staged.add(table, { ids: ids.slice(), grads: grads.slice(), counts: counts?.slice() });
  }

  /**
   * When the step function returned: sends the rows `pushRows` staged if `sendGrads` did not,
   * and under SYNC or SSP tells every shard the step did not push to that this trainer's step
   * is done (a push with no gradients and a sample count of 0), so no shard waits for it.
   */
  async flush(): Promise<void> {
    if (!this.staged.empty && !this.pushed) await this.push(new Map());
    if (this.view.consistency !== 'async' && this.step > 0) await this.skip();
    // A late trainer goes on at the first step some shard still waits for: never past one that
    // has not closed yet (a shard restored behind the job answers late while the others still
    // wait for this trainer's next steps).
    if (this.droppedLate && this.pushedTo.size === this.view.shards.length)
      this.host.stepClosedWithout(Math.min(...this.pushedTo.values()));
  }

  /**
   * Says this trainer has nothing for the step (its data ran out) on every shard it did not push
   * to yet: under SYNC the step closes without waiting for it and without its weight; under SSP
   * its clock moves. Nothing changes under ASYNC. `flush` calls it when the step function
   * returns. Rows staged by `pushRows` and not sent yet cannot go with it: CLIENT_STEP_FAILED.
   */
  async skip(): Promise<PushReport> {
    if (!this.staged.empty)
      throw new ClientError(
        'CLIENT_STEP_FAILED',
        `step ${this.step}: skip with rows staged by pushRows (a push of 0 samples carries no gradients): send them with sendGrads first`,
      );
    const rest = this.view.shards.map((s) => s.index).filter((i) => !this.pushedTo.has(i));
    return this.push(new Map(rest.map((shard) => [shard, []])), 0);
  }

  /**
   * Pushes the step's gradients: checked against the model (element type, element count, shape:
   * CLIENT_SHAPE_MISMATCH), clipped by global norm if configured, split into blocks, and sent as
   * one push per shard (in parallel), each retried with the same step until it is known applied
   * — a retry of a push that was applied is acknowledged as a duplicate. A gradient may be given
   * as `{ values, shape }`; each block carries the tensor's shape, which the pserver checks too.
   */
  async sendGrads(grads: Record<string, Gradient>, options: PushOptions = {}): Promise<PushReport> {
    await this.knowAll(Object.keys(grads));
    const checked = Object.entries(grads).map(([name, given]) => {
      const values = ArrayBuffer.isView(given) ? given : given.values;
      const shape = ArrayBuffer.isView(given) ? undefined : given.shape;
      return { name, values, spec: checkGradient(name, values, shape, this.requireSpec(name)) };
    });
    const scaled = this.clipped(Object.fromEntries(checked.map((g) => [g.name, g.values])));
    const byShard = new Map<number, Tensor[]>();
    for (const { name, spec } of checked) {
      const values = scaled[name]!;
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
          shape: spec.shape,
          content: sliceBytes(values, block.start, block.end),
        });
        byShard.set(block.shard, list);
      }
    }
    return this.push(byShard, options.sampleCount);
  }

  /**
   * The step's push: per shard one SendGrads with its dense blocks and the staged row gradients
   * of its buckets (one SparseGrad per table), in parallel, each retried until known applied.
   */
  private async push(
    dense: ReadonlyMap<number, Tensor[]>,
    sampleCount?: number,
  ): Promise<PushReport> {
    const sparse = this.staged.take(this.host.tables, this.view.shardCount);
    const shards = [...new Set([...dense.keys(), ...sparse.keys()])];
    if (shards.length > 0) this.pushed = true;
    for (const shard of shards) this.pushedTo.set(shard, 0);
    const replies = await Promise.all(
      shards.map((shard) => {
        const push = {
          dense: dense.get(shard) ?? [],
          sparse: sparse.get(shard) ?? [],
          sampleCount,
        };
        if (this.view.consistency === 'sync') this.sent.record(shard, push);
        return this.withRetries(shard, async (address, context) => {
          const reply = await this.host.calls.sendGrads(
            address,
            context,
            push.dense,
            this.limits,
            push.sparse,
            push.sampleCount,
          );
          if (this.host.testHooks.dropReply?.(shard, this.step)) {
            throw new RpcError(14, undefined, 'test fault: the reply was lost', {});
          }
          return reply;
        });
      }),
    );
    return { shards: replies.map((reply, i) => this.outcome(shards[i]!, reply)) };
  }

  private outcome(shard: number, reply: SendGradsResponse__Output): PushReport['shards'][number] {
    if (reply.outcome === 'PUSH_OUTCOME_DROPPED_LATE') this.droppedLate = true;
    this.pushedTo.set(shard, reply.version);
    return { shard, outcome: reply.outcome, version: reply.version };
  }

  /** Lists the model when a name is not known yet (a client that never initialized). */
  private async knowAll(names: readonly string[]): Promise<void> {
    if (names.every((name) => this.host.spec(name) !== undefined)) return;
    await this.listParams();
  }

  /** The table's layout, listing the model first when the client does not know the table. */
  private async knowTable(name: string): Promise<TableLayout> {
    if (!this.host.tables.get(name)) await this.listParams();
    const layout = this.host.tables.get(name);
    if (!layout)
      throw new ClientError(
        'CLIENT_UNKNOWN_TENSOR',
        `table ${name}: no shard holds it (not initialized by this client nor listed)`,
      );
    return layout;
  }

  private requireSpec(name: string): TensorSpec {
    const spec = this.host.spec(name);
    if (!spec)
      throw new ClientError(
        'CLIENT_UNKNOWN_TENSOR',
        `tensor ${name}: no shard holds it (not initialized by this client nor listed)`,
      );
    return spec;
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
   * SYNC: sends this trainer's push of the step before to `shard` again — the shard failed over
   * without it and asked (PSERVER_RESEND_STEP) — with the bytes the client kept (placed anew if
   * the shard count changed since), under the identity that step had. A trainer that took no part in that step there (it joined after, or
   * has a new id) says so with a zero-sample push.
   */
  private async resendLastStep(shard: number): Promise<void> {
    const step = this.step - 1;
    const kept = this.host.lastStepPushes;
    const push = kept?.sentTo(shard, this.trainerId, step, {
      shardCount: this.view.shardCount,
      tables: this.host.tables,
    });
    const pass = push ? kept!.identity.pass : this.pass;
    this.host.logger.info('a shard failed over without the last step: sending it again', {
      shard,
      step,
      kept: push !== undefined,
    });
    await this.withRetries(
      shard,
      (address, context) =>
        this.host.calls.sendGrads(
          address,
          { ...context, pass, step },
          push?.dense ?? [],
          this.limits,
          push?.sparse ?? [],
          push ? push.sampleCount : 0,
        ),
      { resend: false },
    );
  }

  /**
   * Runs a call to `shard`, retrying while its outcome is unknown (connection lost, deadline), the
   * pserver is busy (RESOURCE_EXHAUSTED: after its retry hint) or the shard is not served at the
   * address for now (recovering, fenced, shutting down: until it serves or a new view aborts the
   * context). Retries back off with jitter and end with the step's deadline. If the shard's epoch
   * moved meanwhile, the step is stale and ends. A SYNC shard that failed over without this
   * trainer's last step asks for it (PSERVER_RESEND_STEP): it is sent again, then the call.
   */
  async withRetries<T>(
    shard: number,
    call: (address: string, context: RequestContext) => Promise<T>,
    { resend = true } = {},
  ): Promise<T> {
    let resent = false;
    const attempt = async (): Promise<T> => {
      this.throwIfStale(shard);
      const route = this.view.shards[shard]!;
      try {
        return await call(route.address, this.requestContext(shard));
      } catch (err) {
        if (this.signal.aborted) throw this.staleError(this.signal.reason);
        const tooLarge = asMessageTooLarge(err, `shard ${shard}`, this.host.maxMessageBytes);
        if (tooLarge !== err) throw tooLarge;
        if (isStale(err)) {
          this.host.staleShard(shard, err instanceof RpcError ? err.facts.shardEpoch : undefined);
          throw this.staleError(err);
        }
        // Asked once per call, and the call sent again at once: the shard holds the step now.
        if (isResendStep(err) && resend && !resent) {
          resent = true;
          await this.resendLastStep(shard);
          return attempt();
        }
        throw err;
      }
    };
    return retry(attempt, {
      policy: backoffPolicies.shardFailover,
      signal: this.signal,
      retryIf: (err) => isRetryable(err) || isShardUnavailable(err),
      waitMs: (outcome) =>
        'error' in outcome && outcome.error instanceof RpcError
          ? outcome.error.facts.retryAfterMs
          : undefined,
    }).catch((err: unknown) => {
      // The context ended before or between attempts.
      throw this.signal.aborted && err === this.signal.reason ? this.staleError(err) : err;
    });
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
    return bound === undefined ? grads : clipByGlobalNorm(grads, bound);
  }
}

/**
 * The spec a gradient is sent under, after checking it against the model: the same element type
 * and element count, and, when the trainer gave a shape, the tensor's shape (a tensor declared
 * flat, with no shape, takes `[length]` too). CLIENT_SHAPE_MISMATCH names the tensor, the
 * expected and the actual.
 */
function checkGradient(
  name: string,
  values: TensorArray,
  shape: readonly number[] | undefined,
  spec: TensorSpec,
): TensorSpec {
  const mismatch = (expected: string, actual: string): ClientError =>
    new ClientError(
      'CLIENT_SHAPE_MISMATCH',
      `gradient ${name}: expected ${expected}, got ${actual}`,
    );
  const type = elementTypeOf(values);
  if (type !== spec.elementType) throw mismatch(spec.elementType, type);
  const describe = (s: readonly number[], length: number): string =>
    s.length > 0 ? `shape [${s.join(', ')}]` : `${length} elements`;
  if (values.length !== spec.length)
    throw mismatch(describe(spec.shape, spec.length), `${values.length} elements`);
  if (shape === undefined) return spec;
  const expected = spec.shape.length > 0 ? spec.shape : [spec.length];
  const same = shape.length === expected.length && shape.every((d, i) => d === expected[i]);
  if (!same && !(shape.length === 0 && spec.shape.length === 0))
    throw mismatch(`shape [${expected.join(', ')}]`, `shape [${shape.join(', ')}]`);
  return spec;
}
