import { batches, features, gradients, trueBias, trueWeights } from './model';

describe('the linear regression model', () => {
  it('has zero loss and zero gradient at the true weights', () => {
    const grads = gradients(trueWeights, Float64Array.of(trueBias), batches(1, 16)());
    expect(grads.loss).toBeLessThan(1e-24);
    for (const g of [...grads.w, ...grads.b]) expect(Math.abs(g)).toBeLessThan(1e-12);
  });

  it('matches a finite-difference gradient', () => {
    const batch = batches(2, 8)();
    const w = Float64Array.from({ length: features }, (_, j) => j / 10);
    const b = Float64Array.of(-0.3);
    const exact = gradients(w, b, batch);
    const h = 1e-6;
    for (let j = 0; j < features; j++) {
      const up = Float64Array.from(w);
      const down = Float64Array.from(w);
      up[j]! += h;
      down[j]! -= h;
      const numeric = (gradients(up, b, batch).loss - gradients(down, b, batch).loss) / (2 * h);
      expect(exact.w[j]).toBeCloseTo(numeric, 5);
    }
  });

  it('draws the same batches from the same seed and different ones from another', () => {
    expect(batches(7, 4)().x).toEqual(batches(7, 4)().x);
    expect(batches(7, 4)().x).not.toEqual(batches(8, 4)().x);
  });

  it('reaches the true weights by plain gradient descent', () => {
    const next = batches(3, 32);
    const w = new Float64Array(features);
    const b = new Float64Array(1);
    for (let step = 0; step < 300; step++) {
      const g = gradients(w, b, next());
      for (let j = 0; j < features; j++) w[j]! -= 0.1 * g.w[j]!;
      b[0]! -= 0.1 * g.b[0]!;
    }
    for (let j = 0; j < features; j++) expect(w[j]).toBeCloseTo(trueWeights[j]!, 6);
    expect(b[0]).toBeCloseTo(trueBias, 6);
  });
});
