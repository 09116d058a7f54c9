import {
  inUnitInterval,
  nonNegative,
  positive,
  resolveLearningRate,
  type LearningRatePolicy,
  type OptimizerConfigInput,
} from '../config';
import { invalidConfig } from '../errors';

/**
 * A row optimizer's configuration, in the shape of the dense `OptimizerConfigInput`: one rule
 * member set (or named by `algorithm`), and the same `learningRate` (base and policy, evaluated
 * at the table's step).
 */
export interface RowOptimizerConfigInput {
  algorithm?: string;
  sgd?: object | null;
  adagrad?: { epsilon?: number; initialAccumulator?: number } | null;
  rowwiseAdagrad?: { epsilon?: number; initialAccumulator?: number } | null;
  adam?: {
    beta1?: number;
    beta2?: number;
    epsilon?: number;
    /**
     * 'table' (the default): the table's step t corrects every row, as TF's LazyAdam. 'row': each
     * row keeps its own β1ᵗ and β2ᵗ, as PaddlePaddle's SparseAdamSGDRule.
     */
    biasCorrection?: string;
  } | null;
  learningRate?: OptimizerConfigInput['learningRate'];
}

/** A row rule with every default filled in. */
export type RowRule =
  | { kind: 'sgd' }
  | { kind: 'adagrad' | 'rowwiseAdagrad'; epsilon: number; initialAccumulator: number }
  | {
      kind: 'adam';
      biasCorrection: 'table' | 'row';
      beta1: number;
      beta2: number;
      epsilon: number;
    };

/** A checked row optimizer configuration. */
export interface RowOptimizerConfig {
  rule: RowRule;
  learningRate: LearningRatePolicy;
}

const rules = ['sgd', 'adagrad', 'rowwiseAdagrad', 'adam'] as const;

/**
 * Checks a row optimizer configuration and fills in its defaults: the dense rules' (Adagrad ε
 * 1e-10; Adam β1 0.9, β2 0.999, ε 1e-8) and PyTorch's learning rates (Adagrad and row-wise
 * Adagrad 1e-2, Adam 1e-3; SGD has none and needs `learningRate.base`). Throws `OptimizerError`
 * (OPTIMIZER_INVALID_CONFIG) naming the first bad field and its value.
 */
export function resolveRowOptimizerConfig(
  input: RowOptimizerConfigInput | null | undefined,
): RowOptimizerConfig {
  const config = input ?? {};
  const rule = resolveRule(config);
  const denseKind = rule.kind === 'rowwiseAdagrad' ? 'adagrad' : rule.kind;
  return { rule, learningRate: resolveLearningRate(config.learningRate ?? {}, denseKind) };
}

function resolveRule(config: RowOptimizerConfigInput): RowRule {
  const set = rules.filter((name) => config[name] !== undefined && config[name] !== null);
  if (set.length > 1) throw invalidConfig('algorithm', set.join(', '), 'must name one row rule');
  if (config.algorithm !== undefined && !(rules as readonly string[]).includes(config.algorithm)) {
    throw invalidConfig('algorithm', config.algorithm, `must be one of ${rules.join(', ')}`);
  }
  if (config.algorithm !== undefined && set.length === 1 && set[0] !== config.algorithm) {
    throw invalidConfig(
      'algorithm',
      config.algorithm,
      `must name the rule that is set (${set[0]})`,
    );
  }
  const kind = (config.algorithm ?? set[0] ?? 'sgd') as (typeof rules)[number];
  switch (kind) {
    case 'sgd':
      return { kind };
    case 'adagrad':
    case 'rowwiseAdagrad': {
      const c = config[kind] ?? {};
      return {
        kind,
        epsilon: positive(`${kind}.epsilon`, c.epsilon ?? 1e-10),
        initialAccumulator: nonNegative(`${kind}.initialAccumulator`, c.initialAccumulator ?? 0),
      };
    }
    case 'adam': {
      const c = config.adam ?? {};
      const biasCorrection = c.biasCorrection ?? 'table';
      if (biasCorrection !== 'table' && biasCorrection !== 'row') {
        throw invalidConfig('adam.biasCorrection', biasCorrection, "must be 'table' or 'row'");
      }
      return {
        kind,
        biasCorrection,
        beta1: inUnitInterval('adam.beta1', c.beta1 ?? 0.9),
        beta2: inUnitInterval('adam.beta2', c.beta2 ?? 0.999),
        epsilon: positive('adam.epsilon', c.epsilon ?? 1e-8),
      };
    }
  }
}

/** Where one piece of a row's state lives, in floats from the start of the row. */
export interface RowSlot {
  name: string;
  offset: number;
  length: number;
}

/**
 * The layout of a row of a table under a rule: the `dim` values at offset 0, then the state
 * slots. `name` identifies the layout in checkpoints: two rules with different state (Adam with
 * table or row bias correction) never share a name.
 */
export interface RowLayout {
  name: 'sgd' | 'adagrad' | 'rowwise-adagrad' | 'adam-table' | 'adam-row';
  dim: number;
  /** Floats of state after the values. */
  stateFloats: number;
  /** dim + stateFloats: where row r starts is r × stride. */
  stride: number;
  slots: readonly RowSlot[];
}

/** The row layout of `rule` for rows of `dim` values. */
export function rowLayout(rule: RowRule, dim: number): RowLayout {
  const slots: RowSlot[] = [];
  let offset = dim;
  const add = (name: string, length: number): void => {
    slots.push({ name, offset, length });
    offset += length;
  };
  let name: RowLayout['name'];
  switch (rule.kind) {
    case 'sgd':
      name = 'sgd';
      break;
    case 'adagrad':
      name = 'adagrad';
      add('accumulator', dim);
      break;
    case 'rowwiseAdagrad':
      name = 'rowwise-adagrad';
      add('accumulator', 1);
      break;
    case 'adam':
      add('m', dim);
      add('v', dim);
      if (rule.biasCorrection === 'row') {
        name = 'adam-row';
        add('beta1Power', 1);
        add('beta2Power', 1);
      } else name = 'adam-table';
      break;
  }
  return { name, dim, stateFloats: offset - dim, stride: offset, slots };
}
