import { invalidConfig, OptimizerError } from './errors';

/**
 * An optimizer configuration as decoded from the proto `OptimizerConfig` (camelCase, the oneof's
 * member set, absent `optional` fields undefined) or written by hand in the same shape. The
 * library does not decode protobuf itself.
 */
export interface OptimizerConfigInput {
  algorithm?: string;
  sgd?: { momentum?: number; nesterov?: boolean; weightDecay?: number } | null;
  adam?: { beta1?: number; beta2?: number; epsilon?: number; weightDecay?: number } | null;
  adamw?: { beta1?: number; beta2?: number; epsilon?: number; weightDecay?: number } | null;
  adagrad?: { epsilon?: number; weightDecay?: number; initialAccumulator?: number } | null;
  adadelta?: { rho?: number; epsilon?: number; weightDecay?: number } | null;
  rmsprop?: {
    alpha?: number;
    epsilon?: number;
    momentum?: number;
    centered?: boolean;
    weightDecay?: number;
  } | null;
  learningRate?: {
    base?: number;
    policy?: string;
    constant?: object | null;
    linear?: { decayA?: number; decayB?: number } | null;
    step?: { stepSize?: number; gamma?: number } | null;
    cosine?: { warmupSteps?: number; totalSteps?: number; minRate?: number } | null;
  } | null;
  clipValue?: number;
  clipNorm?: number;
  nonFinite?: string;
}

export type Algorithm =
  | { kind: 'sgd'; momentum: number; nesterov: boolean; weightDecay: number }
  | {
      kind: 'adam' | 'adamw';
      beta1: number;
      beta2: number;
      epsilon: number;
      /** Coupled L2 decay, added to the gradient (Adam). */
      weightDecay: number;
      /** Decoupled decay, applied to the parameter (AdamW). */
      decoupledWeightDecay: number;
    }
  | { kind: 'adagrad'; epsilon: number; weightDecay: number; initialAccumulator: number }
  | { kind: 'adadelta'; rho: number; epsilon: number; weightDecay: number }
  | {
      kind: 'rmsprop';
      alpha: number;
      epsilon: number;
      momentum: number;
      centered: boolean;
      weightDecay: number;
    };

export type LearningRatePolicy =
  | { kind: 'constant'; base: number }
  | { kind: 'linear'; base: number; decayA: number; decayB: number }
  | { kind: 'step'; base: number; stepSize: number; gamma: number }
  | { kind: 'cosine'; base: number; warmupSteps: number; totalSteps: number; minRate: number };

/** A checked configuration with every default filled in. */
export interface OptimizerConfig {
  algorithm: Algorithm;
  learningRate: LearningRatePolicy;
  /** Clip each gradient element to [-clipValue, clipValue]; Infinity when off. */
  clipValue: number;
  /** Rescale a block's gradient whose L2 norm exceeds clipNorm; Infinity when off. */
  clipNorm: number;
  nonFinite: 'reject' | 'skip';
}

const algorithms = ['sgd', 'adam', 'adamw', 'adagrad', 'adadelta', 'rmsprop'] as const;
const policies = ['constant', 'linear', 'step', 'cosine'] as const;

/**
 * The learning rate of each update rule when `learningRate.base` is unset, as in PyTorch. Plain
 * SGD has none: its rate depends on the model too much for any default to be safe, so it must
 * be given.
 */
export const defaultLearningRates: Readonly<Record<Exclude<Algorithm['kind'], 'sgd'>, number>> = {
  adam: 1e-3,
  adamw: 1e-3,
  adagrad: 1e-2,
  rmsprop: 1e-2,
  adadelta: 1.0,
};

/**
 * The rate that configs without `learningRate.base` had, for every rule, before the defaults
 * became PyTorch's. Configs stored then (checkpoints) are read with it, so a restored tensor
 * keeps the rate it was trained with; configs stored since carry their rate.
 */
export const legacyLearningRate = 1;

/**
 * Checks a configuration and fills in its defaults. An empty config is plain SGD, which needs
 * `learningRate.base` (1 subtracts gradients as sent). Throws `OptimizerError`
 * (OPTIMIZER_INVALID_CONFIG) naming the first bad field and its value.
 */
export function resolveOptimizerConfig(
  input: OptimizerConfigInput | null | undefined,
): OptimizerConfig {
  const config = input ?? {};
  const algorithm = resolveAlgorithm(config);
  return {
    algorithm,
    learningRate: resolveLearningRate(config.learningRate ?? {}, algorithm.kind),
    clipValue: optionalPositive('clipValue', config.clipValue),
    clipNorm: optionalPositive('clipNorm', config.clipNorm),
    nonFinite: resolveNonFinite(config.nonFinite),
  };
}

function resolveAlgorithm(config: OptimizerConfigInput): Algorithm {
  const set = algorithms.filter((name) => config[name] !== undefined && config[name] !== null);
  if (set.length > 1) throw invalidConfig('algorithm', set.join(', '), 'must name one update rule');
  if (
    config.algorithm !== undefined &&
    !(algorithms as readonly string[]).includes(config.algorithm)
  ) {
    throw invalidConfig('algorithm', config.algorithm, `must be one of ${algorithms.join(', ')}`);
  }
  if (config.algorithm !== undefined && set.length === 1 && set[0] !== config.algorithm) {
    throw invalidConfig(
      'algorithm',
      config.algorithm,
      `must name the rule that is set (${set[0]})`,
    );
  }
  const kind = (config.algorithm ?? set[0] ?? 'sgd') as (typeof algorithms)[number];
  switch (kind) {
    case 'sgd': {
      const c = config.sgd ?? {};
      const momentum = inUnitInterval('sgd.momentum', c.momentum ?? 0);
      const nesterov = c.nesterov ?? false;
      if (nesterov && momentum === 0)
        throw invalidConfig('sgd.nesterov', true, 'needs sgd.momentum > 0');
      return {
        kind,
        momentum,
        nesterov,
        weightDecay: nonNegative('sgd.weightDecay', c.weightDecay ?? 0),
      };
    }
    case 'adam':
    case 'adamw': {
      const c = config[kind] ?? {};
      const decay = nonNegative(
        `${kind}.weightDecay`,
        c.weightDecay ?? (kind === 'adamw' ? 0.01 : 0),
      );
      return {
        kind,
        beta1: inUnitInterval(`${kind}.beta1`, c.beta1 ?? 0.9),
        beta2: inUnitInterval(`${kind}.beta2`, c.beta2 ?? 0.999),
        epsilon: positive(`${kind}.epsilon`, c.epsilon ?? 1e-8),
        weightDecay: kind === 'adam' ? decay : 0,
        decoupledWeightDecay: kind === 'adamw' ? decay : 0,
      };
    }
    case 'adagrad': {
      const c = config.adagrad ?? {};
      return {
        kind,
        epsilon: positive('adagrad.epsilon', c.epsilon ?? 1e-10),
        weightDecay: nonNegative('adagrad.weightDecay', c.weightDecay ?? 0),
        initialAccumulator: nonNegative('adagrad.initialAccumulator', c.initialAccumulator ?? 0),
      };
    }
    case 'adadelta': {
      const c = config.adadelta ?? {};
      return {
        kind,
        rho: inUnitInterval('adadelta.rho', c.rho ?? 0.9),
        epsilon: positive('adadelta.epsilon', c.epsilon ?? 1e-5),
        weightDecay: nonNegative('adadelta.weightDecay', c.weightDecay ?? 0),
      };
    }
    case 'rmsprop': {
      const c = config.rmsprop ?? {};
      return {
        kind,
        alpha: inUnitInterval('rmsprop.alpha', c.alpha ?? 0.99),
        epsilon: positive('rmsprop.epsilon', c.epsilon ?? 1e-8),
        momentum: inUnitInterval('rmsprop.momentum', c.momentum ?? 0),
        centered: c.centered ?? false,
        weightDecay: nonNegative('rmsprop.weightDecay', c.weightDecay ?? 0),
      };
    }
  }
}

/** Checks a learning-rate config and fills in its defaults (the rule's rate when base is unset). */
export function resolveLearningRate(
  lr: NonNullable<OptimizerConfigInput['learningRate']>,
  algorithm: Algorithm['kind'],
): LearningRatePolicy {
  if (lr.base === undefined && algorithm === 'sgd') {
    throw new OptimizerError(
      'OPTIMIZER_INVALID_CONFIG',
      'optimizer config: optimizer.learning_rate.base is required for plain SGD, which has no ' +
        'default rate (1 subtracts each gradient as sent), got none',
      'learningRate.base',
      undefined,
    );
  }
  const base = nonNegative(
    'learningRate.base',
    lr.base ?? defaultLearningRates[algorithm as keyof typeof defaultLearningRates],
  );
  const set = policies.filter((name) => lr[name] !== undefined && lr[name] !== null);
  if (set.length > 1)
    throw invalidConfig('learningRate.policy', set.join(', '), 'must name one policy');
  if (lr.policy !== undefined && !(policies as readonly string[]).includes(lr.policy)) {
    throw invalidConfig('learningRate.policy', lr.policy, `must be one of ${policies.join(', ')}`);
  }
  const kind = (lr.policy ?? set[0] ?? 'constant') as (typeof policies)[number];
  switch (kind) {
    case 'constant':
      return { kind, base };
    case 'linear':
      return {
        kind,
        base,
        decayA: nonNegative('learningRate.linear.decayA', lr.linear?.decayA ?? 0),
        decayB: nonNegative('learningRate.linear.decayB', lr.linear?.decayB ?? 0),
      };
    case 'step': {
      const stepSize = lr.step?.stepSize ?? 0;
      if (!Number.isSafeInteger(stepSize) || stepSize < 1) {
        throw invalidConfig('learningRate.step.stepSize', stepSize, 'must be an integer ≥ 1');
      }
      const gamma = finite('learningRate.step.gamma', lr.step?.gamma ?? 0.1);
      if (!(gamma > 0 && gamma <= 1))
        throw invalidConfig('learningRate.step.gamma', gamma, 'must be in (0, 1]');
      return { kind, base, stepSize, gamma };
    }
    case 'cosine': {
      const warmupSteps = lr.cosine?.warmupSteps ?? 0;
      const totalSteps = lr.cosine?.totalSteps ?? 0;
      if (!Number.isSafeInteger(warmupSteps) || warmupSteps < 0) {
        throw invalidConfig(
          'learningRate.cosine.warmupSteps',
          warmupSteps,
          'must be an integer ≥ 0',
        );
      }
      if (!Number.isSafeInteger(totalSteps) || totalSteps <= warmupSteps) {
        throw invalidConfig(
          'learningRate.cosine.totalSteps',
          totalSteps,
          `must be an integer > warmupSteps (${warmupSteps})`,
        );
      }
      const minRate = nonNegative('learningRate.cosine.minRate', lr.cosine?.minRate ?? 0);
      if (minRate > base)
        throw invalidConfig(
          'learningRate.cosine.minRate',
          minRate,
          `must be ≤ learningRate.base (${base})`,
        );
      return { kind, base, warmupSteps, totalSteps, minRate };
    }
  }
}

function resolveNonFinite(value: string | undefined): 'reject' | 'skip' {
  switch (value) {
    case undefined:
    case 'reject':
    case 'NON_FINITE_POLICY_REJECT':
      return 'reject';
    case 'skip':
    case 'NON_FINITE_POLICY_SKIP':
      return 'skip';
    default:
      throw invalidConfig(
        'nonFinite',
        value,
        'must be NON_FINITE_POLICY_REJECT or NON_FINITE_POLICY_SKIP',
      );
  }
}

export function finite(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw invalidConfig(field, value, 'must be a finite number');
  return value;
}

export function nonNegative(field: string, value: unknown): number {
  const n = finite(field, value);
  if (n < 0) throw invalidConfig(field, n, 'must be ≥ 0');
  return n;
}

export function positive(field: string, value: unknown): number {
  const n = finite(field, value);
  if (n <= 0) throw invalidConfig(field, n, 'must be > 0');
  return n;
}

export function inUnitInterval(field: string, value: unknown): number {
  const n = finite(field, value);
  if (n < 0 || n >= 1) throw invalidConfig(field, n, 'must be in [0, 1)');
  return n;
}

function optionalPositive(field: string, value: unknown): number {
  return value === undefined ? Number.POSITIVE_INFINITY : positive(field, value);
}
