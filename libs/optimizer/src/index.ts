export type { GradientBuffer } from './backends/backend';
export type {
  Algorithm,
  LearningRatePolicy,
  OptimizerConfig,
  OptimizerConfigInput,
} from './config';
export { defaultLearningRates, legacyLearningRate, resolveOptimizerConfig } from './config';
export type { OptimizerErrorCode } from './errors';
export { OptimizerError } from './errors';
export { learningRateAt } from './learning-rate';
export { copyIntoShared } from './memory/shared-copy';
export { TensorMemory } from './memory/tensor-memory';
export type {
  RowLayout,
  RowOptimizerConfig,
  RowOptimizerConfigInput,
  RowRule,
  RowSlot,
} from './rows/row-config';
export { resolveRowOptimizerConfig, rowLayout } from './rows/row-config';
export { RowOptimizer, type RowKernel } from './rows/row-optimizer';
export type { FloatElementType, GradientVerdict, OptimizerOptions } from './optimizer';
export { defaultTensorMemory, Optimizer } from './optimizer';
export type { OptimizerStateData, OptimizerStateInput, OptimizerStateMessage } from './state';
export { stateFromMessage, stateToMessage } from './state';
