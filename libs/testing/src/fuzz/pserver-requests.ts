import fc from 'fast-check';
import { invalidNameReason, messageType, shardOf } from '@pserver/proto';
import type { Sent, RpcTarget } from './fuzz-rpc';
import { unaryTarget } from './fuzz-rpc';
import {
  anyDouble,
  enumValue,
  extremeUint64s,
  rarely,
  repeated,
  shortText,
  text,
  uint64,
} from './values';
import {
  Content,
  decodeMessage,
  encodeMessage,
  fills,
  fuzzInputs,
  inputBytes,
  RepeatedList,
  type Fill,
  type Repeated,
  type FuzzInput,
} from './wire';

/** A tensor the shard holds, as GetShardStatus lists it. */
export interface HeldTensor {
  name: string;
  elementType: string;
  byteLength: number;
}

/** A table the shard holds, and ids the placement rule puts on this shard and on others. */
export interface HeldTable {
  name: string;
  dim: number;
  idsHere: readonly bigint[];
  idsElsewhere: readonly bigint[];
}

/** What the generators know of the pserver under test, so that many requests get far in. */
export interface PserverFuzzModel {
  /** The shard's epoch. */
  epoch: bigint;
  /** Names placed on this shard (new tensors for InitParam). */
  namesHere: readonly string[];
  /** Names placed on another shard of the job. */
  namesElsewhere: readonly string[];
  /** The tensors the shard holds (gradients and reads aim at them). */
  tensors: readonly HeldTensor[];
  /** The tables the shard holds (row gradients and row reads aim at them). */
  tables: readonly HeldTable[];
  /** Trainer ids that pushed before. */
  trainers: readonly bigint[];
  /** The shard's index and the job's shard count (where the placement rule puts a name). */
  shard: { index: number; count: number };
}

const elementTypes = messageType('Tensor').lookupEnum('ElementType').values;
const typeNumbers = Object.values(elementTypes).filter((n) => n !== 0);
const elementBytes: Record<number, 2 | 4 | 8> = { 1: 4, 2: 4, 3: 8, 4: 8, 5: 4, 6: 8, 7: 2, 8: 2 };

/** The number of an element type's name (`ELEMENT_TYPE_FLOAT32` → 5). */
export function elementTypeNumber(name: string): number {
  const value = elementTypes[name];
  if (value === undefined) throw new Error(`no element type ${name}`);
  return value;
}

const fill: fc.Arbitrary<Fill> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('finite' as const) },
  { weight: 3, arbitrary: fc.constantFrom(...fills) },
);

/** A request context as a trainer stamps it: mostly right, sometimes anything. */
/** A push's sample count, mostly absent (a weight of 1); 0 is a step without data. */
const sampleCount = fc.option(uint64([0n, 1n, 3n]), { freq: 3, nil: undefined });

function context(model: PserverFuzzModel, push: boolean): fc.Arbitrary<object | null> {
  const { epoch } = model;
  const record = fc.record(
    {
      trainerId: push ? uint64([...model.trainers, 1n, 2n, 3n]) : uint64([0n]),
      pass: uint64([0n, 1n]),
      step: push
        ? fc.oneof(
            { weight: 6, arbitrary: fc.bigInt(1n, 1n << 40n) },
            { weight: 2, arbitrary: fc.constantFrom(...extremeUint64s) },
          )
        : uint64([0n]),
      shardEpoch: fc.oneof(
        { weight: 12, arbitrary: fc.constant(epoch) },
        { weight: 1, arbitrary: fc.constantFrom(epoch - 1n, epoch + 1n) },
        { weight: 1, arbitrary: uint64() },
      ),
    },
    { requiredKeys: push ? ['trainerId', 'step', 'shardEpoch'] : ['shardEpoch'] },
  );
  return fc.option(record, { freq: 12, nil: null });
}

/** A byte length near `exact`: mostly it, else one off, a piece off, empty, or far bigger. */
function lengthNear(exact: number, size: number): fc.Arbitrary<number> {
  return fc.oneof(
    { weight: 48, arbitrary: fc.constant(exact) },
    {
      weight: 4,
      arbitrary: fc.constantFrom(0, 1, exact + 1, Math.max(0, exact - 1), exact + size, exact * 2),
    },
    // Megabytes: over the admission cap or the message limit. Rare: they cost the most time.
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 5 * 1024 * 1024 }) },
  );
}

const isOptimized = (t: Pick<HeldTensor, 'elementType'>): boolean =>
  t.elementType === 'ELEMENT_TYPE_FLOAT32' || t.elementType === 'ELEMENT_TYPE_FLOAT64';

/** A gradient for a held tensor: mostly its type and length, sometimes not. */
export function gradient(model: PserverFuzzModel): fc.Arbitrary<object> {
  const aimed = fc
    .record({
      tensor: fc.constantFrom(...model.tensors),
      type: rarely(enumValue(typeNumbers), undefined),
      fill,
      seed: fc.nat(),
      shape: rarely(fc.array(uint64(), { maxLength: 3 }), undefined),
    })
    .chain(({ tensor, type, fill, seed, shape }) => {
      const elementType = type ?? elementTypeNumber(tensor.elementType);
      const size = elementBytes[elementType] ?? 4;
      return lengthNear(tensor.byteLength, size).map((length) => ({
        name: tensor.name,
        elementType,
        ...(shape ? { shape } : {}),
        content: new Content(length, fill, seed, size),
      }));
    });
  return fc.oneof({ weight: 9, arbitrary: aimed }, { weight: 1, arbitrary: anyTensor(model) });
}

/** A gradient of a few bytes: the element of a push of a hundred thousand gradients. */
function tinyGradient(model: PserverFuzzModel): fc.Arbitrary<object> {
  return fc
    .record({
      name: shortText(model.tensors.map((t) => t.name)),
      elementType: enumValue(typeNumbers),
      length: fc.nat(16),
      seed: fc.nat(),
    })
    .map(({ name, elementType, length, seed }) => ({
      name,
      elementType,
      content: new Content(length, 'finite', seed),
    }));
}

/** Any tensor message: names, types, shapes and contents from the generators' whole range. */
function anyTensor(model: PserverFuzzModel): fc.Arbitrary<object> {
  return fc.record(
    {
      name: text([...model.namesHere, ...model.tensors.map((t) => t.name)]),
      elementType: enumValue(typeNumbers),
      shape: repeated(uint64([1n, 2n, 3n])),
      content: fc
        .record({
          length: fc.oneof(
            { weight: 30, arbitrary: fc.nat(64) },
            { weight: 1, arbitrary: fc.integer({ min: 0, max: 5 * 1024 * 1024 }) },
          ),
          fill,
          seed: fc.nat(),
        })
        .map(({ length, fill, seed }) => new Content(length, fill, seed)),
    },
    { requiredKeys: [] },
  );
}

/** Ids as pushes and reads carry them: int64 little-endian, 8 bytes each. */
export function idBytes(ids: readonly bigint[]): Buffer {
  const bytes = Buffer.alloc(8 * ids.length);
  ids.forEach((id, i) => bytes.writeBigInt64LE(BigInt.asIntN(64, id), 8 * i));
  return bytes;
}

/** The whole int64s of `bytes` (little-endian), as pushes and reads carry ids. */
export function idsOf(bytes: Uint8Array): bigint[] {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ids: bigint[] = [];
  for (let at = 0; at + 8 <= view.length; at += 8) ids.push(view.readBigInt64LE(at));
  return ids;
}

/** Ids for a held table: mostly ones placed on this shard (repeats included), rarely others. */
function idsFor(table: HeldTable): fc.Arbitrary<bigint[]> {
  const here = fc.constantFrom(...table.idsHere);
  const any = fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...table.idsElsewhere) },
    { weight: 1, arbitrary: fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }) },
  );
  return fc.array(fc.oneof({ weight: 30, arbitrary: here }, { weight: 1, arbitrary: any }), {
    minLength: 1,
    maxLength: 12,
  });
}

/**
 * A table's row gradients: ids of a held table with grads of ids × dim floats (mostly) and,
 * now and then, occurrence counts; else any table name, ids and bytes.
 */
function sparseGrad(model: PserverFuzzModel): fc.Arbitrary<object> {
  const aimed = fc
    .constantFrom(...model.tables)
    .chain((table) =>
      fc.record({
        table: fc.constant(table),
        ids: idsFor(table),
        fill,
        seed: fc.nat(),
        counts: fc.option(fc.array(fc.nat(4), { maxLength: 14 }), { freq: 3, nil: undefined }),
      }),
    )
    .chain(({ table, ids, fill, seed, counts }) =>
      lengthNear(ids.length * table.dim * 4, 4).map((length) => ({
        table: table.name,
        ids: idBytes(ids),
        grads: new Content(length, fill, seed),
        ...(counts ? { counts: Buffer.from(new Uint32Array(counts).buffer) } : {}),
      })),
    );
  const names = model.tables.map((t) => t.name);
  const any = fc.record(
    {
      table: text(names),
      ids: fc.uint8Array({ maxLength: 80 }).map((bytes) => Buffer.from(bytes)),
      grads: fc
        .record({ length: fc.nat(600), fill, seed: fc.nat() })
        .map(({ length, fill, seed }) => new Content(length, fill, seed)),
      counts: fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
    },
    { requiredKeys: [] },
  );
  return fc.oneof({ weight: 9, arbitrary: aimed }, { weight: 1, arbitrary: any });
}

/** A push's row gradients: none (mostly, when the shard holds no table), or a few tables'. */
function sparseGrads(model: PserverFuzzModel): fc.Arbitrary<object[] | undefined> {
  if (model.tables.length === 0) return fc.constant(undefined);
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    {
      // Each table at most once (mostly: the `any` ones may repeat a name).
      weight: 4,
      arbitrary: fc.uniqueArray(sparseGrad(model), {
        minLength: 1,
        maxLength: 3,
        selector: (g) => (g as { table?: unknown }).table,
      }),
    },
  );
}

/** A new tensor for InitParam: content of a type, and a shape that fits it or not. */
function initTensor(model: PserverFuzzModel): fc.Arbitrary<object> {
  // Every name InitParam accepts adds a tensor that every later check reads. New names come from
  // `namesHere` alone, so the shard stays the same size however long the run: other generated
  // names are ones it refuses (invalid, or placed on another shard).
  const { index, count } = model.shard;
  const refused = (name: string | Repeated): boolean => {
    const text = typeof name === 'string' ? name : name.expand();
    return invalidNameReason(text) !== undefined || shardOf(text, count) !== index;
  };
  return fc
    .record({
      name: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom(...model.namesHere, ...model.namesElsewhere) },
        { weight: 3, arbitrary: text().filter(refused) },
      ),
      elementType: enumValue(typeNumbers),
      elements: fc.oneof(
        { weight: 32, arbitrary: fc.integer({ min: 0, max: 64 }) },
        { weight: 12, arbitrary: fc.integer({ min: 65, max: 16_384 }) },
        { weight: 1, arbitrary: fc.integer({ min: 100_000, max: 800_000 }) },
      ),
      misalign: fc.oneof(
        { weight: 12, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 7 }) },
      ),
      shape: fc.oneof(
        { weight: 12, arbitrary: fc.constant('none' as const) },
        { weight: 12, arbitrary: fc.constant('exact' as const) },
        { weight: 6, arbitrary: fc.constant('matrix' as const) },
        { weight: 3, arbitrary: fc.constant('ones' as const) },
        { weight: 1, arbitrary: fc.constant('huge-rank' as const) },
        { weight: 6, arbitrary: fc.array(uint64([0n, 1n, 2n, 4n]), { maxLength: 8 }) },
      ),
      fill,
      seed: fc.nat(),
    })
    .map(({ name, elementType, elements, misalign, shape, fill, seed }) => {
      const size = elementBytes[elementType] ?? 4;
      const n = BigInt(elements);
      const dims =
        shape === 'none'
          ? []
          : shape === 'exact'
            ? [n]
            : shape === 'matrix'
              ? elements % 2 === 0 && elements > 0
                ? [2n, n / 2n]
                : [1n, n]
              : shape === 'ones'
                ? [1n, 1n, 1n, 1n, 1n, 1n, 1n, 1n, n]
                : shape === 'huge-rank'
                  ? new RepeatedList([1n], 200_000 + (seed % 100_000))
                  : shape;
      return {
        name,
        elementType,
        shape: dims,
        content: new Content(elements * size + misalign, fill, seed, size),
      };
    });
}

const partial = <T extends Record<string, fc.Arbitrary<unknown>>>(fields: T) =>
  fc.record(fields, { requiredKeys: [] });

/** One member of a oneof: `{ key: value }` for one of `members`. */
function oneMember(members: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<object> {
  return fc.oneof(
    ...Object.entries(members).map(([key, value]) => value.map((v) => ({ [key]: v }))),
  );
}

const algorithm = oneMember({
  sgd: partial({ momentum: anyDouble, nesterov: fc.boolean(), weightDecay: anyDouble }),
  adam: partial({ beta1: anyDouble, beta2: anyDouble, epsilon: anyDouble, weightDecay: anyDouble }),
  adamw: partial({
    beta1: anyDouble,
    beta2: anyDouble,
    epsilon: anyDouble,
    weightDecay: anyDouble,
  }),
  adagrad: partial({ epsilon: anyDouble, weightDecay: anyDouble, initialAccumulator: anyDouble }),
  adadelta: partial({ rho: anyDouble, epsilon: anyDouble, weightDecay: anyDouble }),
  rmsprop: partial({
    alpha: anyDouble,
    epsilon: anyDouble,
    momentum: anyDouble,
    centered: fc.boolean(),
    weightDecay: anyDouble,
  }),
});

const policy = oneMember({
  constant: fc.constant({}),
  linear: partial({ decayA: anyDouble, decayB: anyDouble }),
  step: partial({ stepSize: uint64([1n, 10n]), gamma: anyDouble }),
  cosine: partial({
    warmupSteps: uint64([0n, 10n]),
    totalSteps: uint64([100n]),
    minRate: anyDouble,
  }),
});

/**
 * An optimizer config: each algorithm and learning-rate policy with hyperparameters from
 * anywhere; now and then two members of a oneof (the decoder keeps the last).
 */
const optimizerConfig: fc.Arbitrary<object | null> = fc.option(
  fc
    .record({
      algorithm: fc.option(algorithm, { freq: 5, nil: {} }),
      second: fc.oneof(
        { weight: 9, arbitrary: fc.constant({}) },
        { weight: 1, arbitrary: algorithm },
      ),
      learningRate: fc.option(
        fc
          .record({
            base: fc.option(anyDouble, { nil: undefined }),
            policy: fc.option(policy, { nil: {} }),
          })
          .map(({ base, policy }) => ({ ...(base === undefined ? {} : { base }), ...policy })),
        { nil: undefined },
      ),
      rest: partial({ clipValue: anyDouble, clipNorm: anyDouble, nonFinite: enumValue([0, 1]) }),
    })
    .map(({ algorithm, second, learningRate, rest }) => ({
      ...algorithm,
      ...second,
      ...(learningRate ? { learningRate } : {}),
      ...rest,
    })),
  { freq: 3, nil: null },
);

/** InitParam: new tensors with any element type, shape, content and optimizer. */
export function initParamTarget(model: PserverFuzzModel): RpcTarget<FuzzInput<object>> {
  return unaryTarget({
    method: 'InitParam',
    requestType: 'InitParamRequest',
    responseType: 'InitParamResponse',
    values: fc.record(
      {
        context: context(model, false),
        param: fc.option(initTensor(model), { freq: 20, nil: null }),
        optimizer: optimizerConfig,
      },
      { requiredKeys: ['context', 'param'] },
    ),
    encode: (value) => encodeMessage('InitParamRequest', value),
    checkAccepted: (value) =>
      plainSgdWithoutRate(
        decodeMessage('InitParamRequest', encodeMessage('InitParamRequest', value)),
      )
        ? 'a float tensor got plain SGD without optimizer.learning_rate.base (SGD has no default rate)'
        : undefined,
  });
}

/** Whether an InitParam request, as the server parses it, asks for plain SGD without a rate. */
function plainSgdWithoutRate(request: Record<string, unknown>): boolean {
  const param = request.param as { elementType?: string } | null;
  if (
    param?.elementType !== 'ELEMENT_TYPE_FLOAT32' &&
    param?.elementType !== 'ELEMENT_TYPE_FLOAT64'
  )
    return false;
  const optimizer = request.optimizer as {
    algorithm?: string;
    learningRate?: { base?: number } | null;
  } | null;
  const sgd = optimizer?.algorithm === undefined || optimizer.algorithm === 'sgd';
  return sgd && optimizer?.learningRate?.base === undefined;
}

/** FinishInitParams: only a context. */
export function finishInitParamsTarget(model: PserverFuzzModel): RpcTarget<FuzzInput<object>> {
  return unaryTarget({
    method: 'FinishInitParams',
    requestType: 'FinishInitParamsRequest',
    responseType: 'FinishInitParamsResponse',
    values: fc.record({ context: context(model, false) }),
    encode: (value) => encodeMessage('FinishInitParamsRequest', value),
  });
}

/**
 * SendGrads: pushes of gradients aimed at held tensors, and of anything, with or without row
 * gradients for held tables (and row gradients alone).
 */
export function sendGradsTarget(model: PserverFuzzModel): RpcTarget<FuzzInput<object>> {
  const optimized = { ...model, tensors: model.tensors.filter(isOptimized) };
  return unaryTarget({
    method: 'SendGrads',
    requestType: 'SendGradsRequest',
    responseType: 'SendGradsResponse',
    values: fc.record({
      context: context(model, true),
      sampleCount,
      sparse: sparseGrads(model),
      grads: fc.oneof(
        { weight: model.tables.length > 0 ? 2 : 0, arbitrary: fc.constant([]) },
        {
          // A well-formed push: each optimized tensor at most once.
          weight: 6,
          arbitrary: fc.uniqueArray(gradient(optimized), {
            minLength: 1,
            maxLength: 3,
            selector: (g) => (g as { name: unknown }).name,
          }),
        },
        {
          weight: 3,
          arbitrary: repeated(gradient(model), {
            maxLength: 5,
            hugeLength: 100_000,
            small: tinyGradient(model),
          }),
        },
      ),
    }),
    encode: (value) => encodeMessage('SendGradsRequest', withoutUndefined(value)),
    checkAccepted: (value, response) => {
      // An applied push moves the trainer's mark to exactly the step it carried.
      const step = (value as { context?: { step?: bigint } | null }).context?.step ?? 0n;
      if (response.outcome !== 'PUSH_OUTCOME_APPLIED') return undefined;
      if (String(step) !== response.lastAppliedStep)
        return `lastAppliedStep ${String(response.lastAppliedStep)} is not the push's step ${step}`;
      return unaccountedRows(value as { sparse?: object[] }, response);
    },
  });
}

/**
 * Why an applied push's table outcomes do not account for its row gradients, or undefined: one
 * outcome per table pushed, whose rows updated and rejected add up to at most its distinct ids.
 */
function unaccountedRows(
  value: { sparse?: object[] },
  response: Record<string, unknown>,
): string | undefined {
  const pushed = (value.sparse ?? []) as { table?: string; ids?: Buffer }[];
  const outcomes = (response.sparse ?? []) as {
    table: string;
    rowsUpdated: string;
    rowsRejected: string;
  }[];
  if (outcomes.length !== pushed.length)
    return `${outcomes.length} table outcomes for ${pushed.length} tables pushed`;
  for (const outcome of outcomes) {
    const grad = pushed.find((g) => g.table === outcome.table);
    if (!grad?.ids) return `an outcome for table ${outcome.table}, which the push did not name`;
    const distinct = new Set(idsOf(grad.ids));
    const counted = Number(outcome.rowsUpdated) + Number(outcome.rowsRejected);
    if (counted > distinct.size)
      return `table ${outcome.table}: ${counted} rows updated or rejected of ${distinct.size} distinct ids`;
  }
  return undefined;
}

/** GetParams: reads of held tensors, and of anything. */
export function getParamsTarget(model: PserverFuzzModel): RpcTarget<FuzzInput<object>> {
  const held = model.tensors.map((t) => t.name);
  return unaryTarget({
    method: 'GetParams',
    requestType: 'GetParamsRequest',
    responseType: 'GetParamsResponse',
    values: fc.record({
      context: context(model, false),
      names: fc.oneof(
        { weight: 6, arbitrary: fc.subarray(held, { minLength: 1 }) },
        {
          weight: 3,
          arbitrary: repeated(text(held), { hugeLength: 200_000, small: shortText(held) }),
        },
      ),
    }),
    encode: (value) => encodeMessage('GetParamsRequest', value),
  });
}

/**
 * ListParams: only a context. An accepted one lists exactly the tensors the shard holds, each
 * optimized one with its learning rate filled in.
 */
export function listParamsTarget(model: PserverFuzzModel): RpcTarget<FuzzInput<object>> {
  const held = model.tensors.map((t) => t.name).sort();
  return unaryTarget({
    method: 'ListParams',
    requestType: 'ListParamsRequest',
    responseType: 'ListParamsResponse',
    values: fc.record({ context: context(model, false) }),
    encode: (value) => encodeMessage('ListParamsRequest', value),
    checkAccepted: (_value, response) => {
      const params = response.params as {
        name: string;
        elementType: string;
        optimizer: { learningRate?: { base?: number } | null } | null;
      }[];
      const names = params.map((p) => p.name).sort();
      if (names.length !== held.length || names.some((name, i) => name !== held[i]))
        return `it listed ${names.length} tensors, the shard holds ${held.length}`;
      const unrated = params.find(
        (p) => isOptimized(p) && p.optimizer?.learningRate?.base === undefined,
      );
      return unrated ? `it listed ${unrated.name} without its learning rate` : undefined;
    },
  });
}

/**
 * A request with no fields (SaveCheckpoint, GetShardStatus, Drain): only unknown fields and junk
 * vary.
 */
export function emptyRequestTarget(
  method: 'SaveCheckpoint' | 'GetShardStatus' | 'Drain',
): RpcTarget<FuzzInput<object>> {
  return unaryTarget({
    method,
    requestType: `${method}Request`,
    responseType: `${method}Response`,
    values: fc.constant({}),
    encode: (value) => encodeMessage(`${method}Request`, value),
  });
}

/** One piece of a gradient in a stream. */
interface Piece {
  name: string;
  elementType: number;
  offset: bigint;
  content: Content;
}

/** A streamed push as generated: its chunks (each mutated or not) and how the stream ends. */
export interface StreamInput {
  chunks: FuzzInput<object>[];
  breakOff: boolean;
}

/**
 * The pieces of one gradient: its bytes cut in order at `cuts` (fractions), offsets right, or
 * shifted, repeated or extreme; the type right or not.
 */
function pieces(model: PserverFuzzModel): fc.Arbitrary<Piece[]> {
  return fc
    .record({
      tensor: fc.constantFrom(...model.tensors),
      cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 }),
      type: rarely(enumValue(typeNumbers), undefined),
      offsets: fc.oneof(
        { weight: 12, arbitrary: fc.constant('right' as const) },
        {
          weight: 1,
          arbitrary: fc.constantFrom('gap' as const, 'overlap' as const, 'extreme' as const),
        },
      ),
      extra: fc.oneof(
        { weight: 12, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: -8, max: 8 }) },
      ),
      extreme: fc.constantFrom(...extremeUint64s),
      fill,
      seed: fc.nat(),
    })
    .map(({ tensor, cuts, type, offsets, extra, extreme, fill, seed }) => {
      const total = Math.max(0, tensor.byteLength + extra);
      const elementType = type ?? elementTypeNumber(tensor.elementType);
      const size = elementBytes[elementType] ?? 4;
      const bounds = [0, ...cuts.map((c) => Math.floor(c * total)).sort((a, b) => a - b), total];
      return bounds.slice(1).map((end, i): Piece => {
        const start = bounds[i]!;
        const offset =
          offsets === 'right' || (i === 0 && offsets !== 'extreme')
            ? BigInt(start)
            : offsets === 'gap'
              ? BigInt(start + 1)
              : offsets === 'overlap'
                ? BigInt(Math.max(0, start - 1))
                : extreme;
        return {
          name: tensor.name,
          elementType,
          offset,
          content: new Content(end - start, fill, seed + i, size),
        };
      });
    });
}

/**
 * SendGradsStream: the pieces of a few gradients spread over chunks, and row gradients in any of
 * them, the context in the first chunk (mostly), chunks sometimes mutated or junk, the stream
 * sometimes broken off.
 */
export function sendGradsStreamTarget(model: PserverFuzzModel): RpcTarget<StreamInput> {
  const optimized = { ...model, tensors: model.tensors.filter(isOptimized) };
  const plan = fc.record({
    context: context(model, true),
    contextInFirst: fc.oneof(
      { weight: 12, arbitrary: fc.constant(true) },
      { weight: 1, arbitrary: fc.constant(false) },
    ),
    laterContexts: fc.boolean(),
    sampleCount,
    gradients: fc.uniqueArray(
      fc.oneof(
        { weight: 8, arbitrary: pieces(optimized) },
        { weight: 1, arbitrary: pieces(model) },
        {
          weight: 1,
          arbitrary: fc.array(
            anyTensor(model).map((t) => ({ ...t, offset: 0n })),
            { maxLength: 2 },
          ),
        },
      ),
      // Each gradient at most once (mostly): a push names a tensor once.
      { maxLength: 3, selector: (p) => (p[0] as { name?: unknown } | undefined)?.name },
    ),
    sparse: sparseGrads(model),
    chunkCount: fc.integer({ min: 0, max: 6 }),
    seed: fc.nat(),
  });
  const inputs = fc
    .record({
      plan,
      corrupt: fc.array(fc.record({ chunk: fc.nat(), input: fuzzInputs(fc.constant({})) }), {
        maxLength: 1,
      }),
      breakOff: fc.oneof(
        { weight: 9, arbitrary: fc.constant(false) },
        { weight: 1, arbitrary: fc.constant(true) },
      ),
    })
    .map(({ plan, corrupt, breakOff }): StreamInput => {
      const all = plan.gradients.flat();
      const count = Math.max(plan.chunkCount, all.length === 0 ? plan.chunkCount : 1);
      const chunks: object[] = Array.from({ length: count }, (_, i) => ({
        ...(i === 0 && plan.contextInFirst ? { context: plan.context } : {}),
        ...(i === 0 && plan.sampleCount !== undefined ? { sampleCount: plan.sampleCount } : {}),
        ...(i > 0 && plan.laterContexts ? { context: plan.context } : {}),
        grads: [] as object[],
        sparse: [] as object[],
      }));
      // Each table's row gradients whole in one chunk, anywhere in the stream.
      plan.sparse?.forEach((grad, i) =>
        (chunks[(plan.seed + i) % count] as { sparse: object[] } | undefined)?.sparse.push(grad),
      );
      // Pieces in order, spread over the chunks (several per chunk, or a chunk each).
      all.forEach((piece, i) => {
        const chunk = chunks[Math.floor((i * count) / Math.max(all.length, 1))] as {
          grads: object[];
        };
        chunk.grads.push(piece);
      });
      const wrapped: FuzzInput<object>[] = chunks.map((value) => ({ kind: 'message', value }));
      for (const { chunk, input } of corrupt) {
        if (wrapped.length === 0) break;
        const at = chunk % wrapped.length;
        const original = wrapped[at]!;
        wrapped[at] =
          input.kind === 'mutated' && original.kind === 'message'
            ? { kind: 'mutated', value: original.value, mutations: input.mutations }
            : input.kind === 'bytes'
              ? input
              : original;
      }
      return { chunks: wrapped, breakOff };
    });
  return {
    method: 'SendGradsStream',
    kind: 'client-stream',
    requestType: 'SendGradsChunk',
    responseType: 'SendGradsResponse',
    inputs,
    send: (input): Sent => ({
      messages: input.chunks.map((chunk) =>
        inputBytes(chunk, (value) => encodeMessage('SendGradsChunk', value)),
      ),
      breakOff: input.breakOff,
    }),
    checkAccepted: (input, response) => {
      // Applied: the mark moved to the step of the first chunk's context, if it was sent as made.
      const first = input.chunks[0];
      if (response.outcome !== 'PUSH_OUTCOME_APPLIED' || first?.kind !== 'message')
        return undefined;
      const step = (first.value as { context?: { step?: bigint } | null }).context?.step ?? 0n;
      return String(step) === response.lastAppliedStep
        ? undefined
        : `lastAppliedStep ${String(response.lastAppliedStep)} is not the stream's step ${step}`;
    },
  };
}

/**
 * InitTable: specs with any dim, buckets, names and optimizer. After initialization every one is
 * refused (a table joins only before FinishInitParams).
 */
export function initTableTarget(model: PserverFuzzModel): RpcTarget<FuzzInput<object>> {
  return unaryTarget({
    method: 'InitTable',
    requestType: 'InitTableRequest',
    responseType: 'InitTableResponse',
    values: fc.record({
      context: context(model, false),
      spec: fc.option(
        fc.record({
          name: text(model.namesHere),
          dim: fc.oneof(fc.constantFrom(0, 1, 16, 4096, 4097), fc.nat(5000)),
          buckets: fc.oneof(fc.constantFrom(0, 1, 3, 4096, 2 ** 24, 2 ** 25), fc.nat()),
          optimizer: fc.option(
            fc.record({ learningRate: fc.option(fc.record({ base: anyDouble })) }),
          ),
        }),
      ),
    }),
    encode: (value) => encodeMessage('InitTableRequest', value),
  });
}

/**
 * GetRows: reads of held tables by ids placed here (mostly), and of any table name with ids of
 * any length (whole int64s or not). An accepted read has dim values and a found bit per id.
 */
export function getRowsTarget(model: PserverFuzzModel): RpcTarget<FuzzInput<object>> {
  const anyRead = fc.record({
    table: text([...model.namesHere, ...model.tables.map((t) => t.name)]),
    ids: fc.uint8Array({ maxLength: 80 }).map((bytes) => Buffer.from(bytes)),
  });
  const aimed =
    model.tables.length === 0
      ? anyRead
      : fc
          .constantFrom(...model.tables)
          .chain((table) => idsFor(table).map((ids) => ({ table: table.name, ids: idBytes(ids) })));
  return unaryTarget({
    method: 'GetRows',
    requestType: 'GetRowsRequest',
    responseType: 'GetRowsResponse',
    values: fc
      .record({
        context: context(model, false),
        read: fc.oneof({ weight: 3, arbitrary: aimed }, { weight: 1, arbitrary: anyRead }),
      })
      .map(({ context, read }) => ({ context, ...read })),
    encode: (value) => encodeMessage('GetRowsRequest', value),
    checkAccepted: (value, response) => {
      const { table, ids } = value as { table: unknown; ids: Buffer };
      const held = model.tables.find((t) => t.name === table);
      if (!held) return `it read rows of ${String(table)}, which the shard does not hold`;
      const count = ids.length / 8;
      const values = (response.values as Uint8Array).byteLength;
      const found = (response.found as Uint8Array).byteLength;
      if (values !== count * held.dim * 4)
        return `${values} value bytes for ${count} ids of dim ${held.dim}`;
      return found === Math.ceil(count / 8) ? undefined : `${found} found bytes for ${count} ids`;
    },
  });
}

/** The record without its absent (undefined) optional fields. */
function withoutUndefined(value: object): object {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}
