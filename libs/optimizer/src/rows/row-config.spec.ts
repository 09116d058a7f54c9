import { resolveRowOptimizerConfig, rowLayout, type RowOptimizerConfigInput } from './row-config';

describe('resolveRowOptimizerConfig', () => {
  it('fills in the dense rules’ defaults and PyTorch’s learning rates', () => {
    expect(resolveRowOptimizerConfig({ adagrad: {} })).toEqual({
      rule: { kind: 'adagrad', epsilon: 1e-10, initialAccumulator: 0 },
      learningRate: { kind: 'constant', base: 1e-2 },
    });
    expect(resolveRowOptimizerConfig({ rowwiseAdagrad: {} })).toEqual({
      rule: { kind: 'rowwiseAdagrad', epsilon: 1e-10, initialAccumulator: 0 },
      learningRate: { kind: 'constant', base: 1e-2 },
    });
    expect(resolveRowOptimizerConfig({ algorithm: 'adam' })).toEqual({
      rule: { kind: 'adam', biasCorrection: 'table', beta1: 0.9, beta2: 0.999, epsilon: 1e-8 },
      learningRate: { kind: 'constant', base: 1e-3 },
    });
  });

  it('takes a learning-rate policy as the dense configs do', () => {
    expect(
      resolveRowOptimizerConfig({
        sgd: {},
        learningRate: { base: 0.5, step: { stepSize: 100 } },
      }).learningRate,
    ).toEqual({ kind: 'step', base: 0.5, stepSize: 100, gamma: 0.1 });
  });

  it.each<[string, RowOptimizerConfigInput | null | undefined]>([
    ['no config', undefined],
    ['an empty config', {}],
    ['sgd', { sgd: {} }],
  ])('refuses SGD without a learning rate: %s', (_what, input) => {
    expect(() => resolveRowOptimizerConfig(input)).toThrow(
      expect.objectContaining({ code: 'OPTIMIZER_INVALID_CONFIG', field: 'learningRate.base' }),
    );
  });

  it.each<[RowOptimizerConfigInput, string, string]>([
    [{ sgd: {}, adam: {} }, 'algorithm', 'must name one row rule, got "sgd, adam"'],
    [{ algorithm: 'adamw' }, 'algorithm', 'must be one of sgd, adagrad, rowwiseAdagrad, adam'],
    [{ algorithm: 'sgd', adagrad: {} }, 'algorithm', 'must name the rule that is set (adagrad)'],
    [{ adam: { biasCorrection: 'global' } }, 'adam.biasCorrection', "must be 'table' or 'row'"],
    [{ adam: { beta2: 1 } }, 'adam.beta2', 'must be in [0, 1), got 1'],
    [{ rowwiseAdagrad: { epsilon: 0 } }, 'rowwiseAdagrad.epsilon', 'must be > 0, got 0'],
    [{ adagrad: { initialAccumulator: -1 } }, 'adagrad.initialAccumulator', 'must be ≥ 0, got -1'],
    [{ adagrad: {}, learningRate: { base: -1 } }, 'learningRate.base', 'must be ≥ 0, got -1'],
  ])('refuses %j: %s', (input, field, message) => {
    expect(() => resolveRowOptimizerConfig(input)).toThrow(
      expect.objectContaining({
        code: 'OPTIMIZER_INVALID_CONFIG',
        field,
        message: expect.stringContaining(message),
      }),
    );
  });
});

describe('rowLayout', () => {
  const layout = (input: RowOptimizerConfigInput, dim: number) =>
    rowLayout(resolveRowOptimizerConfig({ learningRate: { base: 1 }, ...input }).rule, dim);

  it('puts the values first, then each rule’s state, under a name per layout', () => {
    expect(layout({ sgd: {} }, 8)).toEqual({
      name: 'sgd',
      dim: 8,
      stateFloats: 0,
      stride: 8,
      slots: [],
    });
    expect(layout({ adagrad: {} }, 8)).toMatchObject({
      name: 'adagrad',
      stride: 16,
      slots: [{ name: 'accumulator', offset: 8, length: 8 }],
    });
    expect(layout({ rowwiseAdagrad: {} }, 8)).toMatchObject({
      name: 'rowwise-adagrad',
      stride: 9,
      slots: [{ name: 'accumulator', offset: 8, length: 1 }],
    });
    expect(layout({ adam: {} }, 8)).toMatchObject({
      name: 'adam-table',
      stride: 24,
      slots: [
        { name: 'm', offset: 8, length: 8 },
        { name: 'v', offset: 16, length: 8 },
      ],
    });
    expect(layout({ adam: { biasCorrection: 'row' } }, 8)).toMatchObject({
      name: 'adam-row',
      stateFloats: 18,
      stride: 26,
      slots: [
        { name: 'm', offset: 8, length: 8 },
        { name: 'v', offset: 16, length: 8 },
        { name: 'beta1Power', offset: 24, length: 1 },
        { name: 'beta2Power', offset: 25, length: 1 },
      ],
    });
  });
});
