/**
 * Optimizer throughput on 64M float32 elements (256 MiB per array, far beyond the caches), next to
 * a plain copy (`dst.set(src)`) and a plain `p[i] -= lr * g[i]` loop measured in the same run.
 *
 *   npx nx run optimizer:bench
 *
 * Bytes per element count the arrays read and written once (the STREAM convention): copy 8,
 * SGD 12, momentum and Adagrad 20, Adam 28.
 */
import { Optimizer, type OptimizerConfigInput } from '../src';

const n = 64 * 1024 * 1024;
const repeats = 5;

interface Row {
  name: string;
  bytesPerElement: number;
  secondsBest: number;
  secondsMedian: number;
}

function measure(name: string, bytesPerElement: number, run: () => void): Row {
  run(); // warm-up: compiles, touches every page
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const start = process.hrtime.bigint();
    run();
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  times.sort((a, b) => a - b);
  return { name, bytesPerElement, secondsBest: times[0]!, secondsMedian: times[repeats >> 1]! };
}

function plainLoop(p: Float32Array, g: Float32Array, lr: number): void {
  for (let i = 0; i < p.length; i++) p[i]! -= lr * g[i]!;
}

function filled(length: number, value: number): Float32Array {
  return new Float32Array(length).fill(value);
}

function optimizerRow(
  name: string,
  bytesPerElement: number,
  config: OptimizerConfigInput,
  storage?: 'js',
): Row {
  const optimizer = new Optimizer({
    elementType: 'ELEMENT_TYPE_FLOAT32',
    values: filled(n, 0.5),
    config,
    storage,
  });
  // The pserver's path: the gradient arrives straight in a buffer next to the tensor.
  const gradient = optimizer.allocateGradient();
  gradient.values.fill(1e-3);
  const row = measure(`${name} (${optimizer.kernel})`, bytesPerElement, () =>
    optimizer.update(gradient.values),
  );
  gradient.release();
  optimizer.release();
  return row;
}

const rows: Row[] = [];
{
  const src = filled(n, 1);
  const dst = new Float32Array(n);
  rows.push(measure('copy: dst.set(src)', 8, () => dst.set(src)));
  rows.push(measure('plain loop: p[i] -= lr*g[i]', 12, () => plainLoop(dst, src, 1e-3)));
}
const plain = rows[1]!;
rows.push(optimizerRow('SGD', 12, { learningRate: { base: 0.01 } }));
rows.push(
  optimizerRow('SGD + momentum', 20, { sgd: { momentum: 0.9 }, learningRate: { base: 0.01 } }),
);
rows.push(optimizerRow('Adam', 28, { adam: {}, learningRate: { base: 0.001 } }));
rows.push(optimizerRow('Adagrad', 20, { adagrad: {}, learningRate: { base: 0.01 } }));
rows.push(optimizerRow('SGD', 12, { learningRate: { base: 0.01 } }, 'js'));
rows.push(optimizerRow('Adam', 28, { adam: {}, learningRate: { base: 0.001 } }, 'js'));
{
  const optimizer = new Optimizer({
    elementType: 'ELEMENT_TYPE_FLOAT32',
    values: filled(n, 0.5),
    config: { adam: {} },
  });
  const gradient = optimizer.allocateGradient();
  gradient.values.fill(1e-3);
  rows.push(
    measure('non-finite check of a gradient (wasm)', 4, () => optimizer.check(gradient.values)),
  );
  gradient.release();
  optimizer.release();
}

const header = [
  'kernel',
  'G elem/s (best)',
  'GB/s (best)',
  'median G elem/s',
  'plain loop / this (time)',
];
console.log(`${n.toLocaleString('en')} float32 elements, best and median of ${repeats} passes`);
console.log(header.join(' | '));
for (const row of rows) {
  const rate = n / row.secondsBest / 1e9;
  console.log(
    [
      row.name,
      rate.toFixed(3),
      ((n * row.bytesPerElement) / row.secondsBest / 1e9).toFixed(1),
      (n / row.secondsMedian / 1e9).toFixed(3),
      (row.secondsBest / plain.secondsBest).toFixed(2) + 'x',
    ].join(' | '),
  );
}
