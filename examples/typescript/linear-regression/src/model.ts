/**
 * Linear regression on synthetic data: y = x·w* + b*, with known weights, so that a run can be
 * checked against the answer. Each trainer draws its own batches from a seeded generator.
 */
export const trueWeights = Float64Array.of(1.5, -2, 0.5, 3, -1, 0.25, 2, -0.75);
export const trueBias = 0.5;
export const features = trueWeights.length;

export interface Batch {
  /** Row-major, `rows × features`. */
  x: Float64Array;
  y: Float64Array;
  rows: number;
}

/** A seeded generator of batches (mulberry32 → Box–Muller), so runs can be repeated. */
export function batches(seed: number, rows: number): () => Batch {
  let state = seed >>> 0;
  const uniform = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const normal = (): number =>
    Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
  return () => {
    const x = new Float64Array(rows * features);
    const y = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let target = trueBias;
      for (let j = 0; j < features; j++) {
        const value = normal();
        x[r * features + j] = value;
        target += value * trueWeights[j]!;
      }
      y[r] = target;
    }
    return { x, y, rows };
  };
}

/** The mean squared error ½·mean((x·w + b − y)²) and its gradients with respect to w and b. */
export function gradients(
  w: Float64Array,
  b: Float64Array,
  { x, y, rows }: Batch,
): { loss: number; w: Float64Array; b: Float64Array } {
  const gw = new Float64Array(features);
  const gb = new Float64Array(1);
  let loss = 0;
  for (let r = 0; r < rows; r++) {
    let error = b[0]! - y[r]!;
    for (let j = 0; j < features; j++) error += x[r * features + j]! * w[j]!;
    loss += (error * error) / 2;
    for (let j = 0; j < features; j++) gw[j]! += (error * x[r * features + j]!) / rows;
    gb[0]! += error / rows;
  }
  return { loss: loss / rows, w: gw, b: gb };
}
