import fc from 'fast-check';
import type { RpcTarget } from './fuzz-rpc';
import { unaryTarget } from './fuzz-rpc';
import { repeated, shortText, text, uint32, uint64 } from './values';
import { Content, encodeMessage, Repeated, RepeatedList, type FuzzInput } from './wire';

/** A task handed out and not yet reported. */
export interface PendingTask {
  trainer: bigint;
  id: bigint;
  dispatch: bigint;
}

/**
 * What the generators know of the master under test, read again after every accepted call (so
 * a request can name a live trainer or a pending task of the moment).
 */
export interface MasterFuzzModel {
  live: bigint[];
  /** Trainers whose session ended. */
  ended: bigint[];
  /** The trainer chosen to initialize, if any. */
  initOwner: bigint | undefined;
  pass: bigint;
  /** The view's revision. */
  revision: bigint;
  pending: PendingTask[];
}

/** The dataset the job was given, so that SetDataset can send the same one again. */
export interface DatasetFavorites {
  globs: string[];
  taskBytes: bigint;
  taskTimeoutMs: bigint;
  maxFailures: number;
}

type RefKind = 'live' | 'ended' | 'owner' | 'pass' | 'revision' | 'pending';

/** A value read from the model when the request is encoded: a live trainer's id, the pass, … */
export class Ref {
  constructor(
    readonly kind: RefKind,
    readonly index: number,
    readonly field: keyof PendingTask = 'id',
  ) {}

  resolve(model: MasterFuzzModel): bigint {
    const pick = <T>(list: T[]): T | undefined => list[this.index % Math.max(list.length, 1)];
    switch (this.kind) {
      case 'live':
        return pick(model.live) ?? 0n;
      case 'ended':
        return pick(model.ended) ?? 0n;
      case 'owner':
        return model.initOwner ?? 0n;
      case 'pass':
        return model.pass;
      case 'revision':
        // Just below the view's revision: the watch sends the current view at once.
        return model.revision > 0n ? model.revision - 1n : 0n;
      case 'pending':
        return pick(model.pending)?.[this.field] ?? 0n;
    }
  }

  [fc.toStringMethod](): string {
    return `Ref(${this.kind}[${this.index}]${this.kind === 'pending' ? `.${this.field}` : ''})`;
  }
}

/** `value` with every Ref replaced by what it names in `model` now. */
export function resolveRefs(value: unknown, model: MasterFuzzModel): unknown {
  if (value instanceof Ref) return value.resolve(model);
  if (
    value === null ||
    typeof value !== 'object' ||
    value instanceof Uint8Array ||
    value instanceof Repeated ||
    value instanceof Content
  )
    return value;
  if (value instanceof RepeatedList)
    return new RepeatedList(
      value.items.map((v) => resolveRefs(v, model)),
      value.length,
    );
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, model));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveRefs(v, model)]));
}

const ref = (kind: RefKind, field?: keyof PendingTask): fc.Arbitrary<Ref> =>
  fc.nat().map((index) => new Ref(kind, index, field));

/** A trainer id: mostly a live trainer's, else an ended one's, the init owner's or any. */
const trainerId: fc.Arbitrary<Ref | bigint> = fc.oneof(
  { weight: 8, arbitrary: ref('live') },
  { weight: 1, arbitrary: ref('ended') },
  { weight: 1, arbitrary: ref('owner') },
  { weight: 2, arbitrary: uint64() },
);

const context: fc.Arbitrary<object | null> = fc.option(
  fc.record(
    {
      trainerId,
      pass: fc.oneof(
        { weight: 8, arbitrary: ref('pass') },
        { weight: 2, arbitrary: uint64([0n, 1n]) },
      ),
      step: uint64([0n]),
      shardEpoch: uint64([0n]),
    },
    { requiredKeys: ['trainerId', 'pass'] },
  ),
  { freq: 12, nil: null },
);

/** A unary Master RPC whose values may hold Refs, resolved against `model` at send time. */
function masterTarget<V>(
  model: MasterFuzzModel,
  method: string,
  values: fc.Arbitrary<V>,
  responseType = `${method}Response`,
): RpcTarget<FuzzInput<V>> {
  const requestType = `${method}Request`;
  return unaryTarget({
    method,
    requestType,
    responseType,
    values,
    encode: (value) => encodeMessage(requestType, resolveRefs(value, model) as object),
  });
}

/**
 * One target per Master RPC. `dataset` is the dataset the job was given (SetDataset sends it
 * again now and then, which must be acknowledged as already set).
 */
export function masterTargets(
  model: MasterFuzzModel,
  dataset: DatasetFavorites,
): Record<string, RpcTarget<unknown>> {
  const report = (extra: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<object> =>
    fc.oneof(
      {
        // A report of a pending task by its holder: the one that changes something.
        weight: 6,
        arbitrary: fc.nat().chain((index) =>
          fc.record({
            context: fc.constant({
              trainerId: new Ref('pending', index, 'trainer'),
              pass: new Ref('pass', 0),
            }),
            taskId: fc.constant(new Ref('pending', index, 'id')),
            dispatch: fc.oneof(
              { weight: 8, arbitrary: fc.constant(new Ref('pending', index, 'dispatch')) },
              { weight: 1, arbitrary: uint64([0n, 1n]) },
            ),
            ...extra,
          }),
        ),
      },
      {
        weight: 4,
        arbitrary: fc.record({
          context,
          taskId: uint64([0n, 1n, 2n, 99n, 100n]),
          dispatch: uint64([0n, 1n, 2n]),
          ...extra,
        }),
      },
    );
  const source = fc.oneof(
    fc.record({
      files: fc.record(
        {
          globs: fc.oneof(
            { weight: 4, arbitrary: fc.constant(dataset.globs) },
            {
              weight: 3,
              arbitrary: repeated(text(dataset.globs), {
                hugeLength: 50_000,
                small: shortText(dataset.globs),
              }),
            },
          ),
          taskBytes: uint64([dataset.taskBytes]),
        },
        { requiredKeys: [] },
      ),
    }),
    fc.record({
      records: fc.record(
        { records: uint64([100n, 1000n]), taskRecords: uint64([1n, 10n]) },
        { requiredKeys: [] },
      ),
    }),
    fc.constant({}),
  );
  const targets: RpcTarget<unknown>[] = [
    masterTarget(model, 'RegisterTrainer', fc.record({ name: text(['trainer-0', 'pod-7']) })),
    masterTarget(model, 'KeepAlive', fc.record({ trainerId })),
    masterTarget(model, 'GetClusterView', fc.constant({}), 'ClusterView'),
    {
      ...masterTarget(
        model,
        'WatchCluster',
        fc.record({
          afterRevision: fc.oneof(
            { weight: 6, arbitrary: ref('revision') },
            { weight: 2, arbitrary: uint64([0n]) },
          ),
        }),
        'ClusterView',
      ),
      kind: 'server-stream',
    },
    masterTarget(model, 'Status', fc.constant({})),
    masterTarget(model, 'SetDesiredShards', fc.record({ shardCount: uint32([1, 2, 3]) })),
    masterTarget(
      model,
      'SetDataset',
      fc
        .record({
          source,
          options: fc.record(
            {
              taskTimeoutMs: uint64([dataset.taskTimeoutMs, 1n]),
              maxFailures: uint32([dataset.maxFailures, 1000, 1001]),
            },
            { requiredKeys: [] },
          ),
        })
        .map(({ source, options }) => ({ ...source, ...options })),
    ),
    masterTarget(model, 'GetTask', fc.record({ context })),
    masterTarget(model, 'TaskFinished', report({ records: uint64([10n]) })),
    masterTarget(model, 'TaskFailed', report({ reason: text(['timeout', 'disk full']) })),
    masterTarget(model, 'BeginInit', fc.record({ context })),
    masterTarget(model, 'FinishInit', fc.record({ context })),
    masterTarget(model, 'UnregisterTrainer', fc.record({ trainerId })),
  ];
  return Object.fromEntries(targets.map((t) => [t.method, t]));
}
