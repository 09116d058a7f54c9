/** The demo model's settings, shared by the trainers and the evaluation. */
export const hyperparameters = {
  hidden: 64,
  batch: 32,
  /** Adam's step size. */
  learningRate: 0.004,
  /** About 60 digits per task: a pass is some 130 tasks. */
  taskBytes: 128 * 1024,
} as const;
