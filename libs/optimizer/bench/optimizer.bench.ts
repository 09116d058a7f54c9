/**
 * Optimizer throughput, WebAssembly against a C build of the same rules measured in the same run,
 * at two sizes: 64M float32 elements (256 MiB per array, DRAM-bound) and 1M (4 MiB per array, a
 * pushed block's size, cache-resident). Every pass covers 64M elements: one update of the large
 * tensor, or 64 of the small one.
 *
 *   npx nx run optimizer:bench
 *
 * The C loops (kernels.c, built here with the machine's gcc) leave out weight decay, which the
 * WebAssembly kernels compute even when it is zero, so they are the harder baseline. wasm/C divides
 * the best times by the faster of the two C builds.
 */
import { Optimizer, type OptimizerConfigInput } from '../src';
import { buildCBaseline, type CKernel, type CTiming } from './c-baseline';

const elementsPerPass = 64 * 1024 * 1024;
const sizes = [64 * 1024 * 1024, 1024 * 1024];
const passes = 5;
const cSource = process.argv[2] ?? 'libs/optimizer/bench/kernels.c';

interface Row {
  name: string;
  elements: number;
  wasm: CTiming;
  c: (CTiming | undefined)[];
}

function measure(run: () => void, calls: number): CTiming {
  const times: number[] = [];
  for (let pass = -1; pass < passes; pass++) {
    const start = process.hrtime.bigint();
    for (let c = 0; c < calls; c++) run();
    // The first pass is a warm-up: it compiles and touches every page.
    if (pass >= 0) times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  times.sort((a, b) => a - b);
  return { secondsBest: times[0]!, secondsMedian: times[passes >> 1]! };
}

function optimizerRun(
  elements: number,
  calls: number,
  config: OptimizerConfigInput,
  storage?: 'js',
): CTiming {
  const optimizer = new Optimizer({
    elementType: 'ELEMENT_TYPE_FLOAT32',
    values: new Float32Array(elements).fill(0.5),
    config,
    storage,
  });
  // The pserver's path: the gradient arrives straight in a buffer next to the tensor.
  const gradient = optimizer.allocateGradient();
  gradient.values.fill(1e-3);
  try {
    return measure(() => optimizer.update(gradient.values), calls);
  } finally {
    gradient.release();
    optimizer.release();
  }
}

function checkRun(elements: number, calls: number): CTiming {
  const optimizer = new Optimizer({
    elementType: 'ELEMENT_TYPE_FLOAT32',
    values: new Float32Array(elements),
    config: { adam: {} },
  });
  const gradient = optimizer.allocateGradient();
  gradient.values.fill(1e-3);
  try {
    return measure(() => optimizer.check(gradient.values), calls);
  } finally {
    gradient.release();
    optimizer.release();
  }
}

/**
 * The pserver's push of a gradient arriving in 64 KiB pieces: copy each piece into the buffer,
 * then check and apply it (SGD). With `filled`, each piece is scanned for NaN and ±Infinity as it
 * lands; without, `check` reads the whole buffer again.
 */
function pushRun(elements: number, calls: number, useFilled: boolean): CTiming {
  const optimizer = new Optimizer({
    elementType: 'ELEMENT_TYPE_FLOAT32',
    values: new Float32Array(elements).fill(0.5),
    config: { learningRate: { base: 0.01 } },
  });
  const source = new Uint8Array(new Float32Array(elements).fill(1e-3).buffer);
  const piece = 64 * 1024;
  try {
    return measure(() => {
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
    }, calls);
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
for (const elements of sizes) {
  const calls = elementsPerPass / elements;
  for (const [name, cName, config] of kernels) {
    // C right before WebAssembly, so that both meet the same neighbours on a shared machine.
    const c = builds.map((build) => build.run(cName, elements, calls, passes));
    const wasm = optimizerRun(elements, calls, config);
    rows.push({ name, elements, wasm, c });
  }
  rows.push({ name: 'non-finite check', elements, wasm: checkRun(elements, calls), c: [] });
  for (const useFilled of [false, true]) {
    rows.push({
      name: `push in 64 KiB pieces + check + SGD${useFilled ? ', filled() per piece' : ''}`,
      elements,
      wasm: pushRun(elements, calls, useFilled),
      c: [],
    });
  }
  {
    const src = new Float32Array(elements).fill(1);
    const dst = new Float32Array(elements);
    rows.push({
      name: 'copy dst.set(src)',
      elements,
      wasm: measure(() => dst.set(src), calls),
      c: [],
    });
  }
  if (elements === 1024 * 1024) {
    for (const [name, , config] of [kernels[0]!, kernels[2]!]) {
      const js = optimizerRun(elements, calls, config, 'js');
      rows.push({ name: `${name} (TypeScript reference)`, elements, wasm: js, c: [] });
    }
  }
}
if (typeof baseline !== 'string') baseline.close();

const rate = (t: CTiming | undefined, key: keyof CTiming): string =>
  t ? (elementsPerPass / t[key] / 1e9).toFixed(2) : '—';
const both = (t: CTiming | undefined): string =>
  t ? `${rate(t, 'secondsBest')} (${rate(t, 'secondsMedian')})` : '—';

console.log(
  `G elements/s, best (median) of ${passes} passes of ${elementsPerPass / 2 ** 20}M elements`,
);
console.log(
  ['kernel', 'elements', 'wasm', ...builds.map((b) => `C ${b.flags}`), 'wasm/C'].join(' | '),
);
for (const row of rows) {
  const cBest = row.c
    .filter((t): t is CTiming => t !== undefined)
    .reduce((best, t) => Math.min(best, t.secondsBest), Infinity);
  console.log(
    [
      row.name,
      `${row.elements / 2 ** 20}M`,
      both(row.wasm),
      ...builds.map((_, i) => both(row.c[i])),
      Number.isFinite(cBest) ? `${(cBest / row.wasm.secondsBest).toFixed(2)}x` : '—',
    ].join(' | '),
  );
}
