import { normalFrom, seededRandom } from './random';

/**
 * A small multi-layer perceptron for 28×28 digits: 784 pixels → a hidden layer of ReLU units →
 * 10 classes by softmax. Pure numerics: the trainer pulls these tensors from the pservers, computes
 * gradients here and pushes them back.
 */
export const inputs = 784;
export const classes = 10;

export type MlpParams = {
  /** inputs × hidden, row-major (row = one input pixel). */
  w1: Float32Array;
  b1: Float32Array;
  /** hidden × classes, row-major. */
  w2: Float32Array;
  b2: Float32Array;
};

export const paramNames = ['w1', 'b1', 'w2', 'b2'] as const;

/** One labelled image: pixels scaled to [0, 1]. */
export interface Sample {
  pixels: Float32Array;
  label: number;
}

/** He-initialized weights (seeded, so every trainer proposes the same ones) and zero biases. */
export function initialParams(hidden: number, seed: number): MlpParams {
  const normal = normalFrom(seededRandom(seed));
  const scaled = (n: number, std: number): Float32Array =>
    Float32Array.from({ length: n }, () => normal() * std);
  return {
    w1: scaled(inputs * hidden, Math.sqrt(2 / inputs)),
    b1: new Float32Array(hidden),
    w2: scaled(hidden * classes, Math.sqrt(1 / hidden)),
    b2: new Float32Array(classes),
  };
}

export function hiddenUnits(params: MlpParams): number {
  return params.b1.length;
}

/** The class probabilities for one image, and the hidden activations they came from. */
function forward(
  params: MlpParams,
  pixels: Float32Array,
  hidden: Float64Array,
  probabilities: Float64Array,
): void {
  const { w1, b1, w2, b2 } = params;
  const units = b1.length;
  for (let h = 0; h < units; h++) hidden[h] = b1[h]!;
  for (let i = 0; i < inputs; i++) {
    const x = pixels[i]!;
    if (x === 0) continue; // most pixels are blank
    const row = i * units;
    for (let h = 0; h < units; h++) hidden[h]! += x * w1[row + h]!;
  }
  for (let h = 0; h < units; h++) if (hidden[h]! < 0) hidden[h] = 0;
  let max = -Infinity;
  for (let c = 0; c < classes; c++) {
    let z = b2[c]!;
    for (let h = 0; h < units; h++) z += hidden[h]! * w2[h * classes + c]!;
    probabilities[c] = z;
    if (z > max) max = z;
  }
  let sum = 0;
  for (let c = 0; c < classes; c++) sum += probabilities[c] = Math.exp(probabilities[c]! - max);
  for (let c = 0; c < classes; c++) probabilities[c]! /= sum;
}

/** The mean cross-entropy of a batch and its gradients with respect to every parameter. */
export function gradients(
  params: MlpParams,
  batch: readonly Sample[],
): { loss: number; grads: MlpParams } {
  const units = hiddenUnits(params);
  const grads: MlpParams = {
    w1: new Float32Array(params.w1.length),
    b1: new Float32Array(units),
    w2: new Float32Array(params.w2.length),
    b2: new Float32Array(classes),
  };
  const hidden = new Float64Array(units);
  const probabilities = new Float64Array(classes);
  const dHidden = new Float64Array(units);
  const scale = 1 / batch.length;
  let loss = 0;
  for (const { pixels, label } of batch) {
    forward(params, pixels, hidden, probabilities);
    loss -= Math.log(Math.max(probabilities[label]!, 1e-12));
    // d loss / d logit = p − onehot(label)
    probabilities[label]! -= 1;
    dHidden.fill(0);
    for (let c = 0; c < classes; c++) {
      const dz = probabilities[c]! * scale;
      grads.b2[c]! += dz;
      for (let h = 0; h < units; h++) {
        grads.w2[h * classes + c]! += hidden[h]! * dz;
        dHidden[h]! += params.w2[h * classes + c]! * dz;
      }
    }
    for (let h = 0; h < units; h++) {
      if (hidden[h] === 0) dHidden[h] = 0; // ReLU
      grads.b1[h]! += dHidden[h]!;
    }
    for (let i = 0; i < inputs; i++) {
      const x = pixels[i]!;
      if (x === 0) continue;
      const row = i * units;
      for (let h = 0; h < units; h++) grads.w1[row + h]! += x * dHidden[h]!;
    }
  }
  return { loss: loss * scale, grads };
}

/** The most probable class of each image. */
export function predict(params: MlpParams, samples: readonly Sample[]): number[] {
  const hidden = new Float64Array(hiddenUnits(params));
  const probabilities = new Float64Array(classes);
  return samples.map(({ pixels }) => {
    forward(params, pixels, hidden, probabilities);
    let best = 0;
    for (let c = 1; c < classes; c++) if (probabilities[c]! > probabilities[best]!) best = c;
    return best;
  });
}

/** The share of samples whose predicted class is their label. */
export function accuracy(params: MlpParams, samples: readonly Sample[]): number {
  const predicted = predict(params, samples);
  return predicted.filter((p, i) => p === samples[i]!.label).length / samples.length;
}
