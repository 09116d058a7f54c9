/**
 * Optimizer throughput, WebAssembly against a C build of the same rules measured in the same run,
 * at two sizes: 64M float32 elements (256 MiB per array, DRAM-bound; a pass is one update) and 1M
 * (4 MiB per array, a pushed block's size, cache-resident; a pass is 16 updates).
 *
 *   npx nx run optimizer:bench
 *
 * The C loops (kernels.c, built here with the machine's gcc) leave out weight decay, which the
 * WebAssembly kernels compute even when it is zero, so they are the harder baseline. C and
 * WebAssembly take turns, a few passes each, so that both meet the same neighbours on a shared
 * machine, and the best pass counts (the median is printed too). wasm/C divides the best times by
 * the faster of the two baseline C builds (the third, limited to 128-bit vectors as WebAssembly
 * is, is there for comparison).
 */
import { Optimizer, type OptimizerConfigInput } from '../src';
import { buildCBaseline, type CKernel } from './c-baseline';

interface Size {
  elements: number;
  callsPerPass: number;
  /** Turns of C then WebAssembly, each of `passesPerRound` passes. */
  rounds: number;
  passesPerRound: number;
}

const sizes: Size[] = [
  { elements: 64 * 1024 * 1024, callsPerPass: 1, rounds: 1, passesPerRound: 5 },
  // Short passes, many of them: the caches are shared with whatever else runs on the machine.
  { elements: 1024 * 1024, callsPerPass: 16, rounds: 3, passesPerRound: 8 },
];
/** Passes of what only runs in WebAssembly or TypeScript. */
const passes = 6;
const cSource = process.argv[2] ?? 'libs/optimizer/bench/kernels.c';

interface Timing {
  secondsBest: number;
  secondsMedian: number;
}

interface Row {
  name: string;
  size: Size;
  wasm: Timing;
  c: Timing[];
}

function summary(seconds: number[]): Timing {
  const sorted = [...seconds].sort((a, b) => a - b);
  return { secondsBest: sorted[0]!, secondsMedian: sorted[sorted.length >> 1]! };
}

/** The seconds of each of `passes` passes of `calls` calls, after a warm-up pass if asked. */
function timePasses(run: () => void, calls: number, passes: number, warmUp = true): number[] {
  const times: number[] = [];
  for (let pass = warmUp ? -1 : 0; pass < passes; pass++) {
    const start = process.hrtime.bigint();
    for (let c = 0; c < calls; c++) run();
    if (pass >= 0) times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  return times;
}

/** A float32 optimizer and a gradient in a buffer next to it: the pserver's path. */
function optimizerWithGradient(
  elements: number,
  config: OptimizerConfigInput,
  storage?: 'js',
): { optimizer: Optimizer; gradient: Float32Array; release(): void } {
  const optimizer = new Optimizer({
    elementType: 'ELEMENT_TYPE_FLOAT32',
    values: new Float32Array(elements).fill(0.5),
    config,
    storage,
  });
  const buffer = optimizer.allocateGradient();
  buffer.values.fill(1e-3);
  return {
    optimizer,
    gradient: buffer.values as Float32Array,
    release: () => {
      buffer.release();
      optimizer.release();
    },
  };
}

/** A kernel in C and in WebAssembly, taking turns. */
function kernelRow(name: string, cName: CKernel, config: OptimizerConfigInput, size: Size): Row {
  const { elements, callsPerPass: calls, rounds, passesPerRound } = size;
  const { optimizer, gradient, release } = optimizerWithGradient(elements, config);
  const c: number[][] = builds.map(() => []);
  const wasm: number[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      builds.forEach((build, i) =>
        c[i]!.push(...build.run(cName, elements, calls, passesPerRound)),
      );
      const update = (): void => optimizer.update(gradient);
      wasm.push(...timePasses(update, calls, passesPerRound, round === 0));
    }
  } finally {
    release();
  }
  return { name, size, wasm: summary(wasm), c: c.map(summary) };
}

/** Something measured in WebAssembly (or TypeScript) only. */
function row(name: string, size: Size, run: () => void): Row {
  return { name, size, wasm: summary(timePasses(run, size.callsPerPass, passes)), c: [] };
}

/**
 * The pserver's push of a gradient arriving in 64 KiB pieces: copy each piece into the buffer,
 * then check and apply it (SGD). With `filled`, each piece is scanned for NaN and ±Infinity as it
 * lands; without, `check` reads the whole buffer again.
 */
function pushRow(size: Size, useFilled: boolean): Row {
  const { elements } = size;
  const optimizer = new Optimizer({
    elementType: 'ELEMENT_TYPE_FLOAT32',
    values: new Float32Array(elements).fill(0.5),
    config: { learningRate: { base: 0.01 } },
  });
  const source = new Uint8Array(new Float32Array(elements).fill(1e-3).buffer);
  const piece = 64 * 1024;
  const name = `push in 64 KiB pieces + check + SGD${useFilled ? ', filled() per piece' : ''}`;
  try {
    return row(name, size, () => {
      const gradient = optimizer.allocateGradient();
      const { buffer, byteOffset } = gradient.values;
      const target = new Uint8Array(buffer, byteOffset, source.length);
      for (let at = 0; at < source.length; at += piece) {
        const end = Math.min(at + piece, source.length);
        target.set(source.subarray(at, end), at);
        if (useFilled) gradient.filled(end);
      }
      optimizer.check(gradient.values);
      optimizer.update(gradient.values);
      gradient.release();
    });
  } finally {
    optimizer.release();
  }
}

const kernels: [string, CKernel, OptimizerConfigInput][] = [
  ['SGD', 'sgd', { learningRate: { base: 0.01 } }],
  ['SGD + momentum', 'momentum', { sgd: { momentum: 0.9 }, learningRate: { base: 0.01 } }],
  ['Adam', 'adam', { adam: {} }],
  ['Adagrad', 'adagrad', { adagrad: {} }],
];

const baseline = buildCBaseline(cSource);
if (typeof baseline === 'string') console.log(baseline);
else console.log(`C: ${baseline.compiler}; ${baseline.builds.map((b) => b.flags).join(' | ')}`);
const builds = typeof baseline === 'string' ? [] : baseline.builds;

const rows: Row[] = [];
for (const size of sizes) {
  const { elements } = size;
  for (const [name, cName, config] of kernels) rows.push(kernelRow(name, cName, config, size));
  {
    const { optimizer, gradient, release } = optimizerWithGradient(elements, { adam: {} });
    rows.push(row('non-finite check', size, () => optimizer.check(gradient)));
    release();
  }
  for (const useFilled of [false, true]) rows.push(pushRow(size, useFilled));
  {
    const src = new Float32Array(elements).fill(1);
    const dst = new Float32Array(elements);
    rows.push(row('copy dst.set(src)', size, () => dst.set(src)));
  }
  if (elements === 1024 * 1024) {
    for (const [name, , config] of [kernels[0]!, kernels[2]!]) {
      const { optimizer, gradient, release } = optimizerWithGradient(elements, config, 'js');
      rows.push(row(`${name} (TypeScript reference)`, size, () => optimizer.update(gradient)));
      release();
    }
  }
}
if (typeof baseline !== 'string') baseline.close();

const rate = (size: Size, seconds: number): string =>
  ((size.elements * size.callsPerPass) / seconds / 1e9).toFixed(2);
const both = (size: Size, t: Timing | undefined): string =>
  t ? `${rate(size, t.secondsBest)} (${rate(size, t.secondsMedian)})` : '—';

console.log('G elements/s, best (median) of the passes');
console.log(
  ['kernel', 'elements', 'wasm', ...builds.map((b) => `C ${b.flags}`), 'wasm/C'].join(' | '),
);
for (const r of rows) {
  const cBest = Math.min(...r.c.filter((_, i) => builds[i]!.baseline).map((t) => t.secondsBest));
  console.log(
    [
      r.name,
      `${r.size.elements / 2 ** 20}M`,
      both(r.size, r.wasm),
      ...builds.map((_, i) => both(r.size, r.c[i])),
      Number.isFinite(cBest) ? `${(cBest / r.wasm.secondsBest).toFixed(2)}x` : '—',
    ].join(' | '),
  );
}
