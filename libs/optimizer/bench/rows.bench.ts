/**
 * Row optimizer throughput: batches of 4096 distinct random rows of a 2^18-row table, for dims 16
 * and 64 (the table, 18–130 MiB, is beyond the caches, as a real one is).
 *
 *   npx nx run optimizer:bench-rows
 */
import { RowOptimizer, type RowOptimizerConfigInput } from '../src';

const tableRows = 1 << 18;
const batch = 4096;
const batches = 200;
const repeats = 3;

const rules: [string, RowOptimizerConfigInput][] = [
  ['SGD', { sgd: {}, learningRate: { base: 0.01 } }],
  ['Adagrad', { adagrad: {} }],
  ['row-wise Adagrad', { rowwiseAdagrad: {} }],
  ['Adam, table bias correction', { adam: { biasCorrection: 'table' } }],
  ['Adam, row bias correction', { adam: { biasCorrection: 'row' } }],
];

/** Distinct rows per batch: a seeded shuffle of the table, cut into batches. */
function batchesOfRows(): Int32Array[] {
  const all = Int32Array.from({ length: tableRows }, (_, i) => i);
  let seed = 12345;
  for (let i = tableRows - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % (i + 1);
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return Array.from({ length: batches }, (_, b) =>
    all.subarray((b * batch) % tableRows, ((b * batch) % tableRows) + batch),
  );
}

const rowBatches = batchesOfRows();
for (const dim of [16, 64]) {
  const grads = Float32Array.from({ length: batch * dim }, (_, i) => Math.sin(i) * 0.01);
  for (const [name, config] of rules) {
    const optimizer = new RowOptimizer(config, dim);
    const data = new Float32Array(tableRows * optimizer.layout.stride);
    for (let r = 0; r < tableRows; r++) optimizer.initializeRow(data, r);
    let step = 1;
    for (const rows of rowBatches.slice(0, 20)) optimizer.update(data, rows, grads, step++);
    let best = Infinity;
    for (let k = 0; k < repeats; k++) {
      const start = process.hrtime.bigint();
      for (const rows of rowBatches) optimizer.update(data, rows, grads, step++);
      best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
    }
    const rowsPerSecond = (batch * batches) / best;
    console.log(
      `dim ${String(dim).padStart(2)}  ${name.padEnd(28)} ${(rowsPerSecond / 1e6).toFixed(2)} M rows/s  ${((rowsPerSecond * dim) / 1e9).toFixed(2)} G elements/s`,
    );
  }
}
