import { resolveOptimizerConfig, type OptimizerConfigInput } from './config';
import { OptimizerError } from './errors';

describe('resolveOptimizerConfig', () => {
  it('makes an empty config plain SGD at a constant rate of 1, without clipping, rejecting non-finite', () => {
    expect(resolveOptimizerConfig({})).toEqual({
      algorithm: { kind: 'sgd', momentum: 0, nesterov: false, weightDecay: 0 },
      learningRate: { kind: 'constant', base: 1 },
      clipValue: Infinity,
      clipNorm: Infinity,
      nonFinite: 'reject',
    });
    expect(resolveOptimizerConfig(undefined)).toEqual(resolveOptimizerConfig({}));
  });

  it('gives Adam the defaults that do not divide zero by zero', () => {
    expect(resolveOptimizerConfig({ adam: {} }).algorithm).toEqual({
      kind: 'adam',
      beta1: 0.9,
      beta2: 0.999,
      epsilon: 1e-8,
      weightDecay: 0,
      decoupledWeightDecay: 0,
    });
  });

  it('keeps an explicit 0 apart from unset', () => {
    expect(resolveOptimizerConfig({ adam: { beta1: 0 } }).algorithm).toMatchObject({
      beta1: 0,
      beta2: 0.999,
    });
  });

  it('gives AdamW decoupled decay 0.01 by default and no coupled decay', () => {
    expect(resolveOptimizerConfig({ adamw: {} }).algorithm).toMatchObject({
      kind: 'adamw',
      weightDecay: 0,
      decoupledWeightDecay: 0.01,
    });
  });

  it('reads the shape proto-loader decodes (algorithm named, other members undefined, nulls)', () => {
    const decoded: OptimizerConfigInput = {
      algorithm: 'rmsprop',
      rmsprop: { alpha: 0.9, momentum: 0, centered: true, weightDecay: 0 },
      learningRate: { base: 0.01, policy: 'step', step: { stepSize: 10 } },
      clipNorm: 5,
      nonFinite: 'NON_FINITE_POLICY_SKIP',
    };
    expect(resolveOptimizerConfig(decoded)).toEqual({
      algorithm: {
        kind: 'rmsprop',
        alpha: 0.9,
        epsilon: 1e-8,
        momentum: 0,
        centered: true,
        weightDecay: 0,
      },
      learningRate: { kind: 'step', base: 0.01, stepSize: 10, gamma: 0.1 },
      clipValue: Infinity,
      clipNorm: 5,
      nonFinite: 'skip',
    });
    expect(
      resolveOptimizerConfig({ learningRate: null, sgd: null, adam: undefined }).algorithm.kind,
    ).toBe('sgd');
  });

  it.each<[OptimizerConfigInput, string]>([
    [{ learningRate: { base: -0.1 } }, 'optimizer config: learningRate.base must be ≥ 0, got -0.1'],
    [{ adam: { beta1: 1 } }, 'optimizer config: adam.beta1 must be in [0, 1), got 1'],
    [{ adam: { beta2: -0.5 } }, 'optimizer config: adam.beta2 must be in [0, 1), got -0.5'],
    [{ adam: { epsilon: 0 } }, 'optimizer config: adam.epsilon must be > 0, got 0'],
    [{ adamw: { epsilon: -1e-8 } }, 'optimizer config: adamw.epsilon must be > 0, got -1e-8'],
    [
      { sgd: { momentum: Number.NaN } },
      'optimizer config: sgd.momentum must be a finite number, got NaN',
    ],
    [
      { sgd: { nesterov: true } },
      'optimizer config: sgd.nesterov needs sgd.momentum > 0, got true',
    ],
    [
      { adagrad: { initialAccumulator: -1 } },
      'optimizer config: adagrad.initialAccumulator must be ≥ 0, got -1',
    ],
    [{ adadelta: { rho: 2 } }, 'optimizer config: adadelta.rho must be in [0, 1), got 2'],
    [{ rmsprop: { alpha: 1 } }, 'optimizer config: rmsprop.alpha must be in [0, 1), got 1'],
    [
      { algorithm: 'lamb' },
      'optimizer config: algorithm must be one of sgd, adam, adamw, adagrad, adadelta, rmsprop, got "lamb"',
    ],
    [
      { sgd: {}, adam: {} },
      'optimizer config: algorithm must name one update rule, got "sgd, adam"',
    ],
    [
      { algorithm: 'adam', sgd: {} },
      'optimizer config: algorithm must name the rule that is set (sgd), got "adam"',
    ],
    [{ clipNorm: 0 }, 'optimizer config: clipNorm must be > 0, got 0'],
    [{ clipValue: Infinity }, 'optimizer config: clipValue must be a finite number, got Infinity'],
    [
      { nonFinite: 'ignore' },
      'optimizer config: nonFinite must be NON_FINITE_POLICY_REJECT or NON_FINITE_POLICY_SKIP, got "ignore"',
    ],
    [
      { learningRate: { step: { stepSize: 0 } } },
      'optimizer config: learningRate.step.stepSize must be an integer ≥ 1, got 0',
    ],
    [
      { learningRate: { step: { stepSize: 2, gamma: 1.5 } } },
      'optimizer config: learningRate.step.gamma must be in (0, 1], got 1.5',
    ],
    [
      { learningRate: { cosine: { warmupSteps: 5, totalSteps: 5 } } },
      'optimizer config: learningRate.cosine.totalSteps must be an integer > warmupSteps (5), got 5',
    ],
    [
      { learningRate: { base: 0.1, cosine: { totalSteps: 5, minRate: 0.2 } } },
      'optimizer config: learningRate.cosine.minRate must be ≤ learningRate.base (0.1), got 0.2',
    ],
    [
      { learningRate: { policy: 'exponential' } },
      'optimizer config: learningRate.policy must be one of constant, linear, step, cosine, got "exponential"',
    ],
  ])('rejects %j', (config, message) => {
    let error: unknown;
    try {
      resolveOptimizerConfig(config);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(OptimizerError);
    expect(error).toMatchObject({ code: 'OPTIMIZER_INVALID_CONFIG', message });
  });
});
