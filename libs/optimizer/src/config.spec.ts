import { resolveOptimizerConfig, type OptimizerConfigInput } from './config';
import { OptimizerError } from './errors';

describe('resolveOptimizerConfig', () => {
  it('makes a config with only a rate plain SGD at that constant rate, without clipping, rejecting non-finite', () => {
    expect(resolveOptimizerConfig({ learningRate: { base: 1 } })).toEqual({
      algorithm: { kind: 'sgd', momentum: 0, nesterov: false, weightDecay: 0 },
      learningRate: { kind: 'constant', base: 1 },
      clipValue: Infinity,
      clipNorm: Infinity,
      nonFinite: 'reject',
    });
  });

  it.each<[string, OptimizerConfigInput | null | undefined]>([
    ['an empty config', {}],
    ['no config', undefined],
    ['a null config', null],
    ['sgd', { sgd: {} }],
    ['sgd with momentum', { sgd: { momentum: 0.9 } }],
    ['sgd named by algorithm', { algorithm: 'sgd', learningRate: { policy: 'constant' } }],
    ['sgd with a decaying rate but no base', { learningRate: { step: { stepSize: 2 } } }],
  ])('refuses plain SGD without a learning rate: %s', (_what, input) => {
    expect(() => resolveOptimizerConfig(input)).toThrow(
      expect.objectContaining({
        code: 'OPTIMIZER_INVALID_CONFIG',
        field: 'learningRate.base',
        message: expect.stringContaining('optimizer.learning_rate.base is required for plain SGD'),
      }),
    );
  });

  it.each<[OptimizerConfigInput, number]>([
    [{ adam: {} }, 1e-3],
    [{ adamw: {} }, 1e-3],
    [{ adagrad: {} }, 1e-2],
    [{ rmsprop: {} }, 1e-2],
    [{ adadelta: {} }, 1.0],
    [{ algorithm: 'adam', learningRate: { policy: 'constant' } }, 1e-3],
  ])("gives %j PyTorch's default learning rate %d", (input, base) => {
    expect(resolveOptimizerConfig(input).learningRate).toEqual({ kind: 'constant', base });
  });

  it('keeps an explicit rate, 0 included, and decays from the default', () => {
    expect(resolveOptimizerConfig({ adam: {}, learningRate: { base: 0.5 } }).learningRate).toEqual({
      kind: 'constant',
      base: 0.5,
    });
    expect(resolveOptimizerConfig({ sgd: {}, learningRate: { base: 0 } }).learningRate).toEqual({
      kind: 'constant',
      base: 0,
    });
    expect(
      resolveOptimizerConfig({ adagrad: {}, learningRate: { step: { stepSize: 3 } } }).learningRate,
    ).toEqual({ kind: 'step', base: 1e-2, stepSize: 3, gamma: 0.1 });
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
    expect(resolveOptimizerConfig({ learningRate: null, sgd: null, adam: {} }).algorithm.kind).toBe(
      'adam',
    );
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
    [{ clipNorm: 0, learningRate: { base: 1 } }, 'optimizer config: clipNorm must be > 0, got 0'],
    [
      { clipValue: Infinity, learningRate: { base: 1 } },
      'optimizer config: clipValue must be a finite number, got Infinity',
    ],
    [
      { nonFinite: 'ignore', learningRate: { base: 1 } },
      'optimizer config: nonFinite must be NON_FINITE_POLICY_REJECT or NON_FINITE_POLICY_SKIP, got "ignore"',
    ],
    [
      { learningRate: { base: 1, step: { stepSize: 0 } } },
      'optimizer config: learningRate.step.stepSize must be an integer ≥ 1, got 0',
    ],
    [
      { learningRate: { base: 1, step: { stepSize: 2, gamma: 1.5 } } },
      'optimizer config: learningRate.step.gamma must be in (0, 1], got 1.5',
    ],
    [
      { learningRate: { base: 1, cosine: { warmupSteps: 5, totalSteps: 5 } } },
      'optimizer config: learningRate.cosine.totalSteps must be an integer > warmupSteps (5), got 5',
    ],
    [
      { learningRate: { base: 0.1, cosine: { totalSteps: 5, minRate: 0.2 } } },
      'optimizer config: learningRate.cosine.minRate must be ≤ learningRate.base (0.1), got 0.2',
    ],
    [
      { learningRate: { base: 1, policy: 'exponential' } },
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
