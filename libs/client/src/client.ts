import { randomInt } from 'node:crypto';
import pLimit from 'p-limit';
import { silentLogger, type Logger } from '@pserver/logging';
import {
  defaultBlockSize,
  placeTensor,
  type GetShardStatusResponse__Output,
  type OptimizerConfig,
  type SetDatasetRequest,
  type SetDatasetResponse__Output,
} from '@pserver/proto';
import {
  abortableSleep,
  backoffDelayMs,
  backoffPolicies,
  createLinkedAbortController,
  retry,
  RpcError,
  type ClientSecurity,
} from '@pserver/rpc';
import { tasksOf, type DatasetTask } from './dataset-tasks';
import { ClientError, isRefused } from './errors';
import { checkMaxNorm } from './global-clip';
import { MasterLink, type TrainerRegistration } from './master-link';
import { SessionKeeper } from './session-keeper';
import { ShardCalls } from './shard-calls';
import type { ListedParam } from './model-listing';
import type { StepContext, TestHooks } from './step-context';
import { runStep, type StepHost } from './step-runner';
import type { StepPushes } from './step-pushes';
import { completeTableSpec, TableDirectory, type TableInit, type TableLayout } from './tables';
import {
  elementTypeOf,
  sliceBytes,
  type TensorArray,
  type TensorArrayType,
  type TensorSpec,
} from './tensors';
import {
  changedShards,
  complete,
  consistencyModeName,
  viewFromProto,
  type ConsistencyModeName,
  type View,
} from './view';

export interface ConnectOptions extends ClientSecurity {
  /** Master replicas; the client follows the leader. */
  master?: string[];
  /** Standalone: the pservers, in index order (no master). */
  pservers?: string[];
  /** This trainer's name, for the master's Status and logs. */
  name?: string;
  /**
   * With a master: a client that reads and never takes steps (an evaluator, a tool). SYNC and
   * SSP steps do not wait for it; the pservers refuse its step pushes. Default false.
   */
  observer?: boolean;
  /** Standalone: whether this trainer initializes the parameters (default true). */
  initializer?: boolean;
  /**
   * Standalone: this trainer's id. A SYNC or SSP job counts trainers 1..N (the pservers'
   * `--sync-trainers`), so each trainer of such a job gives its own, and keeps it across
   * restarts; default (ASYNC) a random id.
   */
  trainerId?: number;
  /** Standalone: the block size in elements (the master publishes it otherwise). */
  blockSize?: number;
  /**
   * Clip the L2 norm of all of a step's float32 and float64 gradients together, before they are
   * split: a finite number > 0 (else CLIENT_INVALID_OPTIONS); unset, no clipping. Bit for bit as
   * the Python and Go clients do it (proto/README.md, "Global-norm clipping").
   */
  globalClipNorm?: number;
  /** Deadline of each call. */
  callTimeoutMs?: number;
  /**
   * Deadline of a step, all its runs, retries and waits for a served shard included (default 5
   * minutes): a step fails (`CLIENT_STEP_FAILED`) only when it passes.
   */
  stepTimeoutMs?: number;
  /**
   * The largest gRPC message sent or received (default 64 MiB). Reads are split into calls whose
   * replies stay under half of it; pushes above it are streamed.
   */
  maxMessageBytes?: number;
  logger?: Logger;
  /** Faults and pauses injected by tests. */
  testHooks?: TestHooks;
}

/** Tensors given to `initParams`: values, or values with a shape. */
export type InitialTensor = TensorArray | { values: TensorArray; shape: number[] };

/** What `initParams` initializes besides the dense tensors. */
export interface InitOptions {
  /**
   * Sparse tables (rows looked up by id), each created on every shard (a table is spread over
   * all of them by bucket) by the same elected initializer as the tensors, before the init is
   * finished. Unset buckets: 4096.
   */
  tables?: readonly TableInit[];
}

const mib = 1024 * 1024;
/** InitParam calls a trainer has in flight at once while it initializes the model. */
const initCallsInFlight = 32;

/**
 * A trainer's connection to a job: through the master (following its leader, with a session kept
 * alive and a live cluster view) or to fixed pservers. `initParams`, `step`, `getParams` take and
 * return whole tensors; placement, splitting into blocks, fan-out and reassembly are the client's.
 */
export class PserverClient implements StepHost {
  private readonly specs = new Map<string, TensorSpec>();
  readonly tables = new TableDirectory();
  private readonly contexts = new Set<StepContext>();
  private readonly closing = new AbortController();
  private currentView: View;
  private nextStep = 0;
  /** The next step's number is at least this (where the shards say this trainer should go on). */
  private stepFloor = 1;
  /** The trainer id the step floor was last read from every shard for (cluster SYNC and SSP). */
  private floorFor = 0;
  private passNumber = 0;
  /** SYNC: the last step's pushes, until the next step went through on every shard. */
  lastStepPushes: StepPushes | undefined;
  private session: SessionKeeper | undefined;
  private watching: Promise<void> | undefined;
  private readonly viewWaiters = new Set<() => void>();

  private constructor(
    private readonly options: ConnectOptions,
    readonly calls: ShardCalls,
    private readonly master: MasterLink | undefined,
    public trainerId: number,
    view: View,
    readonly logger: Logger,
  ) {
    this.currentView = view;
  }

  /** Connects to a job: `{ master: [...] }` or `{ pservers: [...] }`. */
  static async connect(options: ConnectOptions): Promise<PserverClient> {
    if (options.globalClipNorm !== undefined)
      checkMaxNorm('globalClipNorm', options.globalClipNorm);
    const logger = options.logger ?? silentLogger;
    const maxMessageBytes = options.maxMessageBytes ?? 64 * mib;
    const calls = new ShardCalls({
      maxMessageBytes,
      flowControlWindowBytes: 32 * mib,
      timeoutMs: options.callTimeoutMs ?? 30_000,
      // A piece must fit in a message whatever the limit (a piece of 4 MiB under a 1 MiB limit
      // was refused by gRPC).
      streamChunkBytes: Math.min(4 * mib, Math.floor(maxMessageBytes / 4)),
      security: { tls: options.tls, token: options.token },
    });
    if (options.master) {
      const master = new MasterLink(options.master, logger, options.callTimeoutMs, {
        tls: options.tls,
        token: options.token,
      });
      const registered = await master.registerTrainer(registrationOf(options));
      const client = new PserverClient(
        options,
        calls,
        master,
        registered.trainerId,
        viewFromProto(registered.view!),
        logger,
      );
      client.keepSessionAlive(master, registered.sessionTtlMs);
      client.watching = master.watch(
        (view) => client.applyView(viewFromProto(view)),
        client.closing.signal,
      );
      logger.info('registered with the master', {
        trainerId: registered.trainerId,
        master: master.address,
      });
      return client;
    }
    if (!options.pservers || options.pservers.length === 0) {
      throw new ClientError(
        'CLIENT_NO_MASTER',
        'connect: give master addresses or pserver addresses',
      );
    }
    const view: View = {
      shardCount: options.pservers.length,
      blockSize: options.blockSize ?? defaultBlockSize,
      shards: options.pservers.map((address, index) => ({
        index,
        address,
        epoch: 0,
        serving: false,
      })),
      revision: 0,
      initialized: false,
      consistency: 'async',
    };
    // Standalone trainers have no registry: the id given, or a random one, unlikely to meet
    // another trainer's.
    const trainerId = options.trainerId ?? randomInt(1, 2 ** 48);
    if (!Number.isSafeInteger(trainerId) || trainerId < 1)
      throw new ClientError(
        'CLIENT_INVALID_OPTIONS',
        `trainerId: must be a whole number ≥ 1, got ${String(options.trainerId)}`,
      );
    const client = new PserverClient(options, calls, undefined, trainerId, view, logger);
    await client.refreshView();
    return client;
  }

  get globalClipNorm(): number | undefined {
    return this.options.globalClipNorm;
  }

  get testHooks(): TestHooks {
    return this.options.testHooks ?? {};
  }

  /** The cluster view as the client knows it now. */
  get view(): View {
    return this.currentView;
  }

  /** The dataset pass steps are stamped with (the task API sets it). */
  get pass(): number {
    return this.passNumber;
  }

  set pass(value: number) {
    this.passNumber = value;
  }

  liveView(): View {
    return this.currentView;
  }

  spec(name: string): TensorSpec | undefined {
    return this.specs.get(name);
  }

  learnModel(model: ReadonlyMap<string, ListedParam>): void {
    for (const [name, { elementType, length, shape }] of model)
      this.specs.set(name, { elementType, length, shape });
  }

  get maxMessageBytes(): number {
    return this.calls.maxMessageBytes;
  }

  /**
   * The model as the pservers hold it, by tensor name: element type, shape, length and the
   * resolved optimizer config (learning rate filled in). Works in a client that never called
   * `initParams` (an evaluator, a late reader); it waits until the model is initialized. The
   * listed tensors can then be read with `getParams` (which lists by itself when it meets a name
   * it does not know).
   */
  async listParams(): Promise<Record<string, ListedParam>> {
    return Object.fromEntries(await this.read((ctx) => ctx.listParams()));
  }

  /**
   * The sparse tables of the job (name, dim, buckets), as declared at `initParams` or listed from
   * the shards; lists the model when the client knows none.
   */
  async listTables(): Promise<TableLayout[]> {
    if (this.tables.all().length === 0) await this.read((ctx) => ctx.listParams());
    return this.tables.all();
  }

  /**
   * Declares the model's tensors and tables and, if this trainer is the one chosen to (the
   * master's init election, or `initializer` standalone), initializes them on the pservers with
   * their optimizer configs; other trainers wait until the parameters are initialized. "Already
   * initialized" is success. Every trainer calls it with the same tensors and tables.
   */
  async initParams(
    tensors: Record<string, InitialTensor>,
    configs: OptimizerConfig | Record<string, OptimizerConfig> = {},
    options: InitOptions = {},
  ): Promise<void> {
    const tables = (options.tables ?? []).map(completeTableSpec);
    for (const table of tables) {
      if (table.name in tensors)
        throw new ClientError(
          'CLIENT_UNKNOWN_TENSOR',
          `table ${table.name}: a tensor has the same name (they share one namespace)`,
        );
      this.tables.declare({ name: table.name, dim: table.dim, buckets: table.buckets });
    }
    const entries = Object.entries(tensors).map(([name, t]) => {
      const values = ArrayBuffer.isView(t) ? t : t.values;
      const shape = ArrayBuffer.isView(t) ? [] : t.shape;
      if (name.includes('@'))
        throw new ClientError(
          'CLIENT_UNKNOWN_TENSOR',
          `tensor ${name}: '@' is not allowed in tensor names`,
        );
      this.specs.set(name, { elementType: elementTypeOf(values), length: values.length, shape });
      return { name, values, shape };
    });
    const configOf = (name: string): OptimizerConfig | undefined =>
      isConfigMap(
        configs,
        entries.map((e) => e.name),
      )
        ? (configs as Record<string, OptimizerConfig>)[name]
        : (configs as OptimizerConfig);
    if (!this.master) {
      if (this.options.initializer ?? true) await this.writeInit(entries, configOf, tables);
      return;
    }
    const { master } = this;
    const { signal } = this.closing;
    const { decision } = await retry(() => master.beginInit(this.trainerId, signal), {
      policy: backoffPolicies.initDecision,
      signal,
      retryIf: () => false,
      // Another trainer is initializing: ask again until it is done (or leaves it to this one).
      again: (reply) =>
        reply.decision !== 'INIT_DECISION_DONE' && reply.decision !== 'INIT_DECISION_INITIALIZE',
    });
    if (decision === 'INIT_DECISION_DONE') return;
    await this.writeInit(entries, configOf, tables);
    await master.finishInit(this.trainerId, signal);
    this.logger.info('initialized the parameters');
  }

  /**
   * Runs one training step: `fn` gets a context that captured the view, the step's identity (this
   * trainer's id, the next step number, the pass) and the step's deadline; every call through it
   * is stamped with them. If the view changes under the step (a shard replaced, an epoch moved),
   * `fn` runs again after a short jittered backoff with a fresh context and the same identity, so
   * shards that already applied its push acknowledge it as a duplicate. Each run waits until every
   * shard is served. The step fails with `CLIENT_STEP_FAILED` only when its deadline
   * (`stepTimeoutMs`) passes; errors that waiting cannot change (bad input, refused) are thrown
   * as they come.
   */
  async step<T>(fn: (ctx: StepContext) => Promise<T>): Promise<T> {
    // A cluster trainer learns where the job's steps are before its first one (and again under
    // a new id: a trainer registered again joins like a new one).
    if (
      this.master &&
      this.currentView.consistency !== 'async' &&
      this.floorFor !== this.trainerId
    ) {
      await this.waitForCompleteView(Date.now() + this.stepTimeoutMs);
      await this.refreshView().catch((err: unknown) => {
        if (isRefused(err)) throw err;
      });
    }
    return runStep(this, fn);
  }

  /** Runs `fn` as a step of no number (0): reads and initialization, outside training. */
  private read<T>(fn: (ctx: StepContext) => Promise<T>): Promise<T> {
    return runStep(this, fn, { reading: true });
  }

  /**
   * The next step's number (never reset, also not when the session gets a new trainer id). Under
   * SYNC it is at least the shards' open step, under SSP past this trainer's last step on any
   * shard: a trainer that (re)starts joins where the job is.
   */
  nextStepNumber(): number {
    this.nextStep = Math.max(this.nextStep + 1, this.stepFloor);
    return this.nextStep;
  }

  keepStepPushes(pushes: StepPushes): void {
    this.lastStepPushes = pushes;
  }

  stepClosedWithout(closedSteps: number): void {
    this.stepFloor = Math.max(this.stepFloor, closedSteps + 1);
  }

  get stepTimeoutMs(): number {
    return this.options.stepTimeoutMs ?? 300_000;
  }

  get closingSignal(): AbortSignal {
    return this.closing.signal;
  }

  /** Tracks a live context: a new view aborts it when it uses a changed shard. */
  track(ctx: StepContext): () => void {
    this.contexts.add(ctx);
    return () => this.contexts.delete(ctx);
  }

  /**
   * Sets the job's dataset (`{ files: { globs, taskBytes } }` or `{ records: { records,
   * taskRecords } }`). Every trainer may call it: only the first counts, the same one again is
   * acknowledged (`alreadySet`), a different one is refused.
   */
  setDataset(request: SetDatasetRequest): Promise<SetDatasetResponse__Output> {
    return this.requireMaster('setDataset').setDataset(request, this.closing.signal);
  }

  /**
   * The dataset's tasks for this trainer in `pass`, until the pass is over; steps taken meanwhile
   * are stamped with the pass. `for await (const task of client.tasks(pass))`: a task is reported
   * finished when the loop moves on, failed when the loop throws or breaks out. Under SYNC and
   * SSP, while no task is free (the others hold the pass's last ones), the trainer takes empty
   * steps — zero-sample contributions — so that the others' steps close and the pass ends.
   */
  tasks(pass: number): AsyncGenerator<DatasetTask> {
    const master = this.requireMaster('tasks');
    this.passNumber = pass;
    const signal = this.closing.signal;
    const trainer = (): number => this.trainerId;
    const idle = async (): Promise<void> => {
      if (this.currentView.consistency !== 'async') await this.step(async () => undefined);
    };
    return tasksOf(
      {
        master,
        signal,
        get trainerId() {
          return trainer();
        },
        idle,
      },
      pass,
    );
  }

  /** FinishJob answered that the job is finished. */
  private jobFinished = false;

  /**
   * Says this trainer is done with the job, which finishes once `trainers` trainers (this one
   * included, each counted once by name) said so — 0 or 1: at once. A finished job's pservers
   * commit a final checkpoint and exit; read what you need first. Resolves to whether the job is
   * finished now.
   */
  async finishJob(options: { trainers?: number } = {}): Promise<boolean> {
    const trainers = options.trainers ?? 0;
    if (!Number.isInteger(trainers) || trainers < 0 || trainers > 0xffff_ffff)
      throw new ClientError(
        'CLIENT_INVALID_OPTIONS',
        `finishJob: trainers must be a whole number from 0 to ${0xffff_ffff}, got ${trainers}`,
      );
    const reply = await this.requireMaster('finishJob').finishJob(
      this.trainerId,
      trainers,
      this.closing.signal,
    );
    // A finished job's masters leave once its pservers have: close() does not wait on them.
    this.jobFinished ||= reply.finished;
    return reply.finished;
  }

  /** Reads whole tensors outside a training step (a step of its own, with no push). */
  getParams<N extends string, T extends TensorArray = TensorArray>(
    names: readonly N[],
    as?: TensorArrayType<T>,
  ): Promise<Record<N, T>> {
    return this.read((ctx) => ctx.getParams(names, as));
  }

  /** Reads rows of a table outside a training step (a step of its own, with no push). */
  lookup(table: string, ids: BigInt64Array): Promise<Float32Array> {
    return this.read((ctx) => ctx.lookup(table, ids));
  }

  /** Ends the session (the master frees this trainer's tasks at once) and closes every connection. */
  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    const closed = new ClientError('CLIENT_CLOSED', 'the client was closed');
    this.closing.abort(closed);
    for (const ctx of this.contexts) ctx.abort(closed);
    await this.session?.close();
    await this.watching;
    if (this.master && !this.jobFinished)
      await this.master.unregisterTrainer(this.trainerId).catch(() => undefined);
    this.master?.close();
    this.calls.close();
  }

  private requireMaster(what: string): MasterLink {
    if (this.master) return this.master;
    throw new ClientError(
      'CLIENT_NO_MASTER',
      `${what}: needs a master (standalone pservers have no dataset and no job to finish); connect with { master }`,
    );
  }

  /** Reports from a context that a shard's epoch moved; refresh before the step runs again. */
  staleShard(index: number, epoch: number | undefined): void {
    if (this.master || epoch === undefined) return;
    // Standalone: the restarted pserver told its new epoch (it answered, so it serves).
    const shards = this.currentView.shards.map((s) =>
      s.index === index ? { ...s, epoch, serving: true } : s,
    );
    this.applyView({ ...this.currentView, shards, revision: this.currentView.revision + 1 });
  }

  /**
   * Gets the current view: from the master, or standalone from each pserver's status. Under SYNC
   * and SSP the shards' statuses also say where this trainer's steps go on (`raiseStepFloor`).
   */
  async refreshView(): Promise<void> {
    if (this.master) {
      const view = viewFromProto(await this.master.getClusterView(this.closing.signal));
      this.applyView(view);
      if (view.consistency !== 'async' && complete(view)) {
        const trainerId = this.trainerId;
        const statuses = await this.statuses(view);
        if (statuses.every((status) => status !== undefined)) {
          this.raiseStepFloor(view.consistency, statuses);
          this.floorFor = trainerId;
        }
      }
      return;
    }
    const statuses = await this.statuses(this.currentView);
    // A pserver answers its status only once it serves (recovering: PSERVER_NOT_SERVING).
    const shards = this.currentView.shards.map((s, i) => ({
      ...s,
      epoch: statuses[i]?.shardEpoch ?? 0,
      serving: statuses[i] !== undefined,
    }));
    const answered = statuses.filter((status) => status !== undefined);
    const consistency = consistencyOf(answered) ?? this.currentView.consistency;
    if (answered.length === statuses.length) this.raiseStepFloor(consistency, answered);
    this.applyView({
      ...this.currentView,
      shards,
      consistency,
      revision: this.currentView.revision + 1,
    });
  }

  /** Each shard's status with this trainer's last step on it; undefined where none answered. */
  private statuses(view: View): Promise<(GetShardStatusResponse__Output | undefined)[]> {
    return Promise.all(
      view.shards.map((s) =>
        this.calls
          .status(s.address, { signal: this.closing.signal }, this.trainerId)
          .catch((err: unknown) => {
            if (isRefused(err)) throw err;
            return undefined;
          }),
      ),
    );
  }

  /**
   * Where this trainer goes on, from every shard's status: SYNC at the open step of the shard
   * furthest behind (its step may still wait for this trainer), SSP past its last step anywhere
   * and never below the slowest member's clock (a trainer that joins a running job starts there).
   */
  private raiseStepFloor(
    consistency: ConsistencyModeName,
    statuses: readonly GetShardStatusResponse__Output[],
  ): void {
    if (consistency === 'sync')
      this.stepFloor = Math.max(this.stepFloor, Math.min(...statuses.map((s) => s.version)) + 1);
    if (consistency === 'ssp')
      this.stepFloor = Math.max(
        this.stepFloor,
        Math.max(...statuses.map((s) => Math.max(s.trainerLastStep, s.minClock))) + 1,
      );
  }

  private applyView(next: View): void {
    if (next.revision < this.currentView.revision) return;
    const changed = changedShards(this.currentView, next);
    this.currentView = next;
    if (changed.length > 0) {
      this.logger.info('cluster view changed', { shards: changed, revision: next.revision });
      const stale = new ClientError('CLIENT_STALE_VIEW', `shards ${changed.join(', ')} changed`);
      for (const ctx of this.contexts) if (ctx.usesChanged(changed)) ctx.abort(stale);
    }
    for (const wake of this.viewWaiters) wake();
  }

  /**
   * Waits until every shard is assigned and served, or `deadline` passes (then false). The
   * master's watch wakes it on every new view; standalone, it polls the pservers' status.
   */
  async waitForCompleteView(deadline: number): Promise<boolean> {
    for (let look = 1; !complete(this.currentView); look++) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      const pauseMs = Math.min(backoffDelayMs(backoffPolicies.viewPoll, look), left);
      // A new view from the watch ends the pause early; so does close().
      const woken = new AbortController();
      const wake = (): void => woken.abort();
      this.viewWaiters.add(wake);
      const linked = createLinkedAbortController(this.closing.signal, woken.signal);
      try {
        await abortableSleep(pauseMs, linked.signal).catch(() => undefined);
      } finally {
        linked.cleanup();
        this.viewWaiters.delete(wake);
      }
      this.closing.signal.throwIfAborted();
      if (!this.master || !complete(this.currentView))
        await this.refreshView().catch((err: unknown) => {
          if (isRefused(err)) throw err;
        });
    }
    return true;
  }

  private keepSessionAlive(master: MasterLink, ttlMs: number): void {
    this.session = new SessionKeeper(master, {
      intervalMs: Math.max(100, ttlMs / 3),
      registration: registrationOf(this.options),
      logger: this.logger,
      trainerId: () => this.trainerId,
      onNewTrainerId: (id) => (this.trainerId = id),
    });
  }

  private async writeInit(
    entries: { name: string; values: TensorArray; shape: number[] }[],
    configOf: (name: string) => OptimizerConfig | undefined,
    tables: readonly TableInit[],
  ): Promise<void> {
    await this.read(async (ctx) => {
      const view = ctx.view;
      // A model of thousands of blocks must not be thousands of calls at once: they starved the
      // pserver's event loop (and its lease keep-alives) under load.
      const limit = pLimit(initCallsInFlight);
      await Promise.all(
        entries.flatMap(({ name, values, shape }) =>
          placeTensor(name, values.length, view.blockSize, view.shardCount).map((block) =>
            limit(() =>
              ctx.withRetries(block.shard, (address, context) =>
                this.calls
                  .initParam(
                    address,
                    context,
                    {
                      name: block.name,
                      elementType: elementTypeOf(values),
                      shape,
                      content: sliceBytes(values, block.start, block.end),
                    },
                    configOf(name),
                    ctx.limits,
                  )
                  .catch(ignoreAlreadyInitialized),
              ),
            ),
          ),
        ),
      );
      // Every shard holds some of a table's buckets: each gets the table.
      await Promise.all(
        tables.flatMap((spec) =>
          view.shards.map((s) =>
            limit(() =>
              ctx.withRetries(s.index, (address, context) =>
                this.calls
                  .initTable(address, context, spec, ctx.limits)
                  .catch(ignoreAlreadyInitialized),
              ),
            ),
          ),
        ),
      );
      await this.testHooks.beforeFinishInit?.();
      await Promise.all(
        view.shards.map((s) =>
          ctx.withRetries(s.index, (address, context) =>
            this.calls
              .finishInitParams(address, context, ctx.limits)
              .catch(ignoreAlreadyInitialized),
          ),
        ),
      );
    });
  }
}

function registrationOf(options: ConnectOptions): TrainerRegistration {
  return { name: options.name ?? `trainer-${process.pid}`, observer: options.observer ?? false };
}

/** The job's mode as the shards report it; they must agree (they are started with one). */
function consistencyOf(
  statuses: readonly GetShardStatusResponse__Output[],
): ConsistencyModeName | undefined {
  const modes = new Set(statuses.map((s) => consistencyModeName(s.consistency?.mode)));
  if (modes.size > 1)
    throw new ClientError(
      'CLIENT_INVALID_OPTIONS',
      `the pservers run different consistency modes (${[...modes].join(', ')}): start every shard with the same --consistency`,
    );
  return [...modes][0];
}

function ignoreAlreadyInitialized(err: unknown): undefined {
  if (err instanceof RpcError && err.code === 'PSERVER_ALREADY_INITIALIZED') return undefined;
  throw err;
}

/** Whether `configs` maps tensor names to configs (rather than being one config for all). */
function isConfigMap(configs: object, names: string[]): boolean {
  const keys = Object.keys(configs);
  return keys.length > 0 && keys.every((k) => names.includes(k));
}

/** Connects a trainer to a job. */
export function connect(options: ConnectOptions): Promise<PserverClient> {
  return PserverClient.connect(options);
}
