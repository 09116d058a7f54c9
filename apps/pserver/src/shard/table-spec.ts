import {
  EmbeddingError,
  SparseTable,
  type AdmissionRule,
  type PreparedSparsePush,
  type SparseGradBytes,
  type RowInit,
  type SparseTableOptions,
} from '@pserver/embedding';
import {
  OptimizerError,
  resolveRowOptimizerConfig,
  type RowOptimizerConfigInput,
} from '@pserver/optimizer';
import {
  invalidNameReason,
  maxTableBuckets,
  type TableSpec,
  type TableSpec__Output,
} from '@pserver/proto';
import { PserverError } from './errors';

/** A checked table spec: the options of its `SparseTable` and the spec with defaults filled in. */
export interface CheckedTableSpec {
  options: Omit<SparseTableOptions, 'shardIndex' | 'shardCount'>;
  /** What ListParams answers and checkpoints keep. */
  spec: TableSpec;
}

/**
 * Checks an InitTable spec field by field, throwing PSERVER_INVALID_ARGUMENT (PSERVER_INVALID_NAME,
 * OPTIMIZER_INVALID_CONFIG) naming the first bad field and its value.
 */
export function checkTableSpec(spec: TableSpec__Output | null): CheckedTableSpec {
  if (!spec) throw invalid('spec: required');
  const name = spec.name;
  const reason = invalidNameReason(name) ?? (name.includes('@') ? 'must not contain @' : undefined);
  if (reason) {
    throw new PserverError(
      'PSERVER_INVALID_NAME',
      `spec.name: ${JSON.stringify(name.slice(0, 100))} ${reason}`,
    );
  }
  const field = (f: string): string => `table ${name}: spec.${f}`;
  const { dim, buckets } = spec;
  if (!Number.isInteger(dim) || dim < 1 || dim > 4096)
    throw invalid(`${field('dim')}: must be in [1, 4096], got ${dim}`);
  if (
    !Number.isInteger(buckets) ||
    buckets < 1 ||
    buckets > maxTableBuckets ||
    (buckets & (buckets - 1)) !== 0
  )
    throw invalid(`${field('buckets')}: must be a power of two in [1, 2^24], got ${buckets}`);
  const valueType = spec.valueType || 'ELEMENT_TYPE_UNSPECIFIED';
  if (valueType !== 'ELEMENT_TYPE_FLOAT32' && valueType !== 'ELEMENT_TYPE_UNSPECIFIED')
    throw invalid(
      `${field('valueType')}: only ELEMENT_TYPE_FLOAT32 is supported, got ${valueType}`,
    );

  const initializer = spec.initializer;
  const seed = initializer?.seed ?? 0;
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw invalid(
      `${field('initializer.seed')}: must be at most 2^53 − 1 (larger values are not kept exactly), got ${seed}`,
    );
  const init = rowInit(initializer, field);

  const optimizerInput = rowOptimizerInput(spec.optimizer);
  const nonFinite = spec.optimizer?.nonFinite ?? 'NON_FINITE_POLICY_UNSPECIFIED';
  if (nonFinite !== 'NON_FINITE_POLICY_UNSPECIFIED' && nonFinite !== 'NON_FINITE_POLICY_REJECT')
    throw invalid(
      `${field('optimizer.nonFinite')}: only NON_FINITE_POLICY_REJECT is supported for tables, got ${nonFinite}`,
    );
  try {
    resolveRowOptimizerConfig(optimizerInput);
  } catch (err) {
    if (err instanceof OptimizerError)
      err.message = `table ${name}: spec.optimizer: ${err.message}`;
    throw err;
  }

  let admission: AdmissionRule = { kind: 'all' };
  const rule = spec.admission;
  if (rule?.counting) {
    const minCount = rule.counting.minCount;
    if (!Number.isInteger(minCount) || minCount < 1)
      throw invalid(`${field('admission.counting.minCount')}: must be ≥ 1, got ${minCount}`);
    admission = { kind: 'counting', minCount };
  } else if (rule?.probabilistic) {
    const p = rule.probabilistic.probability;
    if (!(p > 0 && p <= 1))
      throw invalid(`${field('admission.probabilistic.probability')}: must be in (0, 1], got ${p}`);
    admission = { kind: 'probabilistic', probability: p };
  }

  const eviction = spec.eviction;
  const ttlSteps = optionalCount(eviction?.ttlSteps, field('eviction.ttlSteps'), 1, 2 ** 32 - 1);
  const maxRows = optionalCount(eviction?.maxRows, field('eviction.maxRows'), 1, 2 ** 31 - 2);
  const expectedRows = spec.expectedRows;
  if (!Number.isSafeInteger(expectedRows) || expectedRows < 0)
    throw invalid(
      `${field('expectedRows')}: must be an integer in [0, 2^53 − 1], got ${expectedRows}`,
    );
  const pullMissing = spec.pullMissing === 'PULL_MISSING_ZERO' ? 'zero' : 'init';

  return {
    options: {
      name,
      dim,
      buckets,
      init,
      seedLo: seed % 2 ** 32,
      seedHi: Math.floor(seed / 2 ** 32),
      optimizer: optimizerInput,
      admission,
      ...(ttlSteps !== undefined && { ttlSteps }),
      ...(maxRows !== undefined && { maxRows }),
      expectedRows,
      pullMissing,
    },
    spec: {
      ...spec,
      valueType: 'ELEMENT_TYPE_FLOAT32',
      pullMissing: pullMissing === 'zero' ? 'PULL_MISSING_ZERO' : 'PULL_MISSING_INIT',
      optimizer: { ...spec.optimizer, nonFinite: 'NON_FINITE_POLICY_REJECT' },
    },
  };
}

function rowInit(
  initializer: TableSpec__Output['initializer'],
  field: (f: string) => string,
): RowInit {
  if (initializer?.constant) {
    const value = initializer.constant.value;
    if (!Number.isFinite(value))
      throw invalid(`${field('initializer.constant.value')}: must be finite, got ${value}`);
    return { kind: 'constant', value };
  }
  if (initializer?.uniform) {
    const { low, high } = initializer.uniform;
    if (!Number.isFinite(low) || !Number.isFinite(high) || !(low < high))
      throw invalid(
        `${field('initializer.uniform')}: low and high must be finite with low < high, got [${low}, ${high})`,
      );
    return { kind: 'uniform', low, high };
  }
  if (initializer?.normal) {
    const { mean, stddev } = initializer.normal;
    if (!Number.isFinite(mean) || !Number.isFinite(stddev) || stddev < 0)
      throw invalid(
        `${field('initializer.normal')}: mean must be finite and stddev finite and ≥ 0, got ${mean}, ${stddev}`,
      );
    return { kind: 'normal', mean, stddev };
  }
  return { kind: 'zeros' };
}

/** The proto config in the library's shape: the bias correction enum becomes 'table' or 'row'. */
function rowOptimizerInput(config: TableSpec__Output['optimizer']): RowOptimizerConfigInput {
  if (!config) return {};
  const { adam, sgd, adagrad, rowwiseAdagrad, learningRate, algorithm } = config;
  const input: RowOptimizerConfigInput = {
    ...(algorithm !== undefined && { algorithm }),
    ...(sgd && { sgd }),
    ...(adagrad && { adagrad: definedOnly(adagrad) }),
    ...(rowwiseAdagrad && { rowwiseAdagrad: definedOnly(rowwiseAdagrad) }),
    ...(learningRate && { learningRate: learningRate as RowOptimizerConfigInput['learningRate'] }),
  };
  if (adam) {
    const { biasCorrection, ...rest } = adam;
    input.adam = {
      ...definedOnly(rest),
      biasCorrection: biasCorrection === 'ADAM_BIAS_CORRECTION_ROW_STEP' ? 'row' : 'table',
    };
  }
  return input;
}

function definedOnly<T extends object>(value: T): T {
  return Object.fromEntries(
    Object.entries(value).filter(([k, v]) => v !== undefined && v !== null && !k.startsWith('_')),
  ) as T;
}

function optionalCount(
  value: number | undefined | null,
  field: string,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value) || value < min || value > max)
    throw invalid(`${field}: must be an integer in [${min}, ${max}], got ${value}`);
  return value;
}

function invalid(message: string): PserverError {
  return new PserverError('PSERVER_INVALID_ARGUMENT', message);
}

/** An embedding library error as the pserver's code (the proto `ErrorCode`), message kept. */
export function tableError(err: unknown): unknown {
  if (!(err instanceof EmbeddingError)) return err;
  const code = (
    {
      EMBEDDING_LENGTH_MISMATCH: 'PSERVER_LENGTH_MISMATCH',
      EMBEDDING_WRONG_SHARD: 'PSERVER_WRONG_SHARD',
      EMBEDDING_NON_FINITE_GRADIENT: 'PSERVER_NON_FINITE_GRADIENT',
      EMBEDDING_CAPACITY_EXHAUSTED: 'PSERVER_TABLE_FULL',
      EMBEDDING_INVALID_ARGUMENT: 'PSERVER_INVALID_ARGUMENT',
    } as const
  )[err.code];
  return new PserverError(code, err.message);
}

/**
 * A push's rows of `table` checked and prepared (`SparseTable.checkPush`): a failure is the
 * pserver's error, its message naming the table.
 */
export function checkTablePush(table: ShardTable, grad: SparseGradBytes): PreparedSparsePush {
  try {
    return table.table.checkPush(grad);
  } catch (err) {
    if (err instanceof Error && !err.message.startsWith('table '))
      err.message = `sparse ${table.table.name}: ${err.message}`;
    throw tableError(err);
  }
}

/** A table's part held by a shard, with the spec InitTable gave (defaults filled in). */
export interface ShardTable {
  table: SparseTable;
  spec: TableSpec;
  /** The table's options but its shard: what makes its part on another shard count. */
  options: CheckedTableSpec['options'];
}

/** A new table's part on shard `shardIndex` of `shardCount`, from a checked spec. */
export function createShardTable(
  checked: CheckedTableSpec,
  shardIndex: number,
  shardCount: number,
): ShardTable {
  return {
    table: new SparseTable({ ...checked.options, shardIndex, shardCount }),
    spec: checked.spec,
    options: checked.options,
  };
}
