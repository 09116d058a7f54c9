import { bucketOfBigInt, shardOf, tableShardOf } from '@pserver/proto';
import { serviceNames } from '@pserver/rpc';
import {
  bytesOf,
  describeReport,
  emptyRequestTarget,
  finishInitParamsTarget,
  fuzzRpc,
  fuzzSettings,
  getParamsTarget,
  getRowsTarget,
  initTableTarget,
  initParamTarget,
  listParamsTarget,
  PserverDriver,
  PserverFuzzSubject,
  replicationTargets,
  residentBytes,
  sendGradsStreamTarget,
  sendGradsTarget,
  startPserverProcess,
  stopAllProcesses,
  type FuzzReport,
  type HeldTable,
  type PserverFuzzModel,
  type PserverProcess,
  type RpcTarget,
} from '@pserver/testing';

// Property-based fuzzing of a real pserver process: every RPC gets FUZZ_RUNS generated requests
// (structurally valid messages with extreme values, their encodings mutated, and junk), sent as
// raw bytes. Each answer must be documented, a rejected request must leave every byte of the
// shard as it was, the process must stay up, and its memory bounded. FUZZ_SEED replays a run.

const { seed, runs } = fuzzSettings();
const maxMessageMiB = 4;
const mib = 1024 * 1024;
// Per test: a generous bound that only catches a hang (cases run at 30–280/s here).
const timeoutMs = 120_000 + runs * 200;
const rssGrowthBoundBytes = 768 * mib;
// Each RPC must have been both accepted and refused (the fuzzer got past the first checks). A run
// of fewer cases may miss one kind of answer by chance, so the check needs this many.
const coverageChecked = runs >= 100;

afterAll(stopAllProcesses);

/** `count` names the placement rule puts on `index` of `shards`, made from `stem`. */
function namesOn(index: number, shards: number, stem: string, count: number): string[] {
  const names: string[] = [];
  for (let i = 0; names.length < count; i++)
    if (shardOf(`${stem}${i}`, shards) === index) names.push(`${stem}${i}`);
  return names;
}

/** Table `name` of `dim` and `buckets`, with `count` ids placed on `index` of `shards` and 4 not. */
function tableOn(index: number, shards: number, name: string, dim: number, buckets: number) {
  const here: bigint[] = [];
  const elsewhere: bigint[] = [];
  for (let id = 1n; here.length < 24 || elsewhere.length < 4; id += 7919n) {
    const placed = tableShardOf(name, bucketOfBigInt(id, buckets), shards) === index;
    if (placed && here.length < 24) here.push(id);
    if (!placed && elsewhere.length < 4) elsewhere.push(-id);
  }
  return { name, dim, buckets, idsHere: here, idsElsewhere: elsewhere };
}

describe(`fuzzing a pserver process (seed ${seed}, ${runs} cases per RPC)`, () => {
  let pserver: PserverProcess;
  let subject: PserverFuzzSubject;
  let driver: PserverDriver;
  let model: PserverFuzzModel;
  let rssAtStart: number;
  const reports: FuzzReport[] = [];
  const summary: string[] = [];

  /**
   * Fuzzes one RPC. Every refused call is checked against GetShardStatus (counters, tensors,
   * sizes, shapes, step marks, bytes in flight) and every tenth, and every accepted one, against
   * every byte of the shard too; pushes, the calls that write tensor bytes, always in full.
   */
  const fuzz = async (target: RpcTarget<unknown>): Promise<FuzzReport> => {
    const fullEvery = target.method.startsWith('SendGrads') ? 1 : 10;
    const report = await fuzzRpc(target, subject, { seed, runs, fullEvery });
    reports.push(report);
    return report;
  };

  beforeAll(async () => {
    pserver = await startPserverProcess([
      ...['--index', '0', '--shards', '2'],
      ...['--max-message-mb', String(maxMessageMiB), '--max-push-mb-in-flight', '2'],
      // No periodic checkpoint may change the status in the middle of a long run.
      ...['--checkpoint-interval-s', '86400'],
    ]);
    driver = new PserverDriver(pserver.address);
    subject = new PserverFuzzSubject(pserver, maxMessageMiB * mib);
    const epoch = await driver.epoch();
    const context = { shardEpoch: epoch };
    // Tensors of each kind the fuzzed pushes aim at (InitParam's fuzzing may replace them).
    const here = (stem: string): string => namesOn(0, 2, stem, 1)[0]!;
    const t = { w: here('w'), b: here('b'), ids: here('ids'), skip: here('skip') };
    const more = { half: here('half'), block: here('blk@') };
    // A float tensor InitParam's cases never name (it is not in `namesHere`): whatever they
    // replace the others with, the pushes keep one they can update.
    const kept = here('kept');
    await driver.initParam(
      context,
      { name: kept, elementType: 'ELEMENT_TYPE_FLOAT32', content: bytesOf(new Float32Array(48)) },
      { sgd: { momentum: 0.5 }, learningRate: { base: 0.1 } },
    );
    await driver.initParam(
      context,
      {
        name: t.w,
        elementType: 'ELEMENT_TYPE_FLOAT32',
        shape: [32, 32],
        content: bytesOf(new Float32Array(1024).fill(0.5)),
      },
      { adam: {}, learningRate: { base: 0.01, cosine: { warmupSteps: 10, totalSteps: 1000 } } },
    );
    await driver.initParam(
      context,
      {
        name: t.b,
        elementType: 'ELEMENT_TYPE_FLOAT64',
        content: bytesOf(new Float64Array(16).fill(-1)),
      },
      { sgd: { momentum: 0.9, nesterov: true }, clipNorm: 1, learningRate: { base: 1 } },
    );
    await driver.initParam(context, {
      name: t.ids,
      elementType: 'ELEMENT_TYPE_INT32',
      content: bytesOf(new Int32Array(8).fill(7)),
    });
    await driver.initParam(
      context,
      { name: t.skip, elementType: 'ELEMENT_TYPE_FLOAT32', content: bytesOf(new Float32Array(64)) },
      { rmsprop: { centered: true, momentum: 0.5 }, nonFinite: 'NON_FINITE_POLICY_SKIP' },
    );
    await driver.initParam(context, {
      name: more.half,
      elementType: 'ELEMENT_TYPE_FLOAT16',
      content: Buffer.alloc(8),
    });
    await driver.initParam(
      context,
      {
        name: more.block,
        elementType: 'ELEMENT_TYPE_FLOAT32',
        shape: [8192],
        content: bytesOf(new Float32Array(4096)),
      },
      { adagrad: {} },
    );
    // Tables of each kind the fuzzed row pushes and reads aim at: one plain, one that admits a
    // row at its second occurrence and evicts rows idle for 50 of its steps.
    const tables = [tableOn(0, 2, 'emb', 8, 64), tableOn(0, 2, 'adm', 4, 16)];
    await driver.initTable(context, {
      name: 'emb',
      dim: 8,
      buckets: 64,
      initializer: { uniform: { low: -0.1, high: 0.1 }, seed: 7 },
      optimizer: { adagrad: {}, learningRate: { base: 0.1 } },
    });
    await driver.initTable(context, {
      name: 'adm',
      dim: 4,
      buckets: 16,
      optimizer: { rowwiseAdagrad: {}, learningRate: { base: 0.05 } },
      admission: { counting: { minCount: 2 } },
      eviction: { ttlSteps: 50 },
    });
    for (const table of tables) subject.watchRows(table.name, table.idsHere);
    model = {
      epoch: BigInt(epoch),
      tables: tables.map((t): HeldTable => t),
      // New tensors take these names only, so the shard's size stays bounded in long runs.
      namesHere: [
        ...Object.values(t),
        ...Object.values(more),
        ...namesOn(0, 2, 'p', 6),
        ...namesOn(0, 2, 'x@', 2),
        ...['é', '名前', '🙂'].map((stem) => namesOn(0, 2, stem, 1)[0]!),
        // 1024 bytes, the longest name allowed.
        namesOn(0, 2, 'y'.repeat(1023), 1)[0]!,
      ],
      namesElsewhere: namesOn(1, 2, 'p', 3),
      tensors: [],
      trainers: [1n, 2n, 3n],
      shard: { index: 0, count: 2 },
    };
    rssAtStart = residentBytes(pserver.process.pid);
  });

  afterAll(async () => {
    console.log([`pserver fuzzing, seed ${seed}, ${runs} cases per RPC:`, ...summary].join('\n  '));
    subject?.close();
    driver?.close();
    await pserver?.process.stop();
  });

  it(
    'InitParam before initialization: documented answers, refusals change nothing',
    async () => {
      const report = await fuzz(initParamTarget(model));
      if (coverageChecked) {
        expect(report.accepted).toBeGreaterThan(0);
        expect(report.accepted).toBeLessThan(report.cases);
      }
    },
    timeoutMs,
  );

  it(
    'FinishInitParams initializes once; the shard holds exactly what accepted InitParams sent',
    async () => {
      const report = await fuzz(finishInitParamsTarget(model));
      expect(report.accepted).toBeLessThanOrEqual(1);
      if (report.accepted === 0) await driver.finishInitParams({ shardEpoch: Number(model.epoch) });
      const state = await subject.snapshot();
      expect(state.status.initialized).toBe(true);
      // Type, shape and bytes of every tensor are those of the last accepted InitParam.
      for (const [name, sent] of subject.initialContents)
        expect([name, state.params[name]]).toEqual([name, sent]);
      const tensors = state.status.tensors as {
        name: string;
        elementType: string;
        bytes: string;
      }[];
      model = {
        ...model,
        tensors: tensors.map((t) => ({
          name: t.name,
          elementType: t.elementType,
          byteLength: Number(t.bytes),
        })),
      };
      // The pushes to come need a tensor they can update.
      const optimized = ['ELEMENT_TYPE_FLOAT32', 'ELEMENT_TYPE_FLOAT64'];
      expect(model.tensors.some((tensor) => optimized.includes(tensor.elementType))).toBe(true);
    },
    timeoutMs,
  );

  it(
    'SendGrads: documented answers, refused pushes change no byte, applied ones report their step',
    async () => {
      const report = await fuzz(sendGradsTarget(model));
      if (coverageChecked) {
        expect(report.accepted).toBeGreaterThan(0);
        const status = await subject.status();
        expect(Number(status.updatesApplied)).toBeGreaterThan(0);
        // Row gradients were applied to both tables, and some ids were not admitted.
        const tables = status.tables as { name: string; step: string; rowsRejected: string }[];
        for (const table of tables)
          expect([table.name, Number(table.step)]).not.toEqual([table.name, 0]);
        expect(Number(tables.find((t) => t.name === 'adm')?.rowsRejected)).toBeGreaterThan(0);
      }
    },
    timeoutMs,
  );

  it(
    'SendGradsStream: chunked, mutated and broken-off streams apply all or nothing',
    async () => {
      const report = await fuzz(sendGradsStreamTarget(model));
      if (coverageChecked) {
        expect(report.accepted).toBeGreaterThan(0);
        expect(report.answers['CANCELLED (broken off)']).toBeGreaterThan(0);
      }
    },
    timeoutMs,
  );

  it.each([
    ['GetParams', () => getParamsTarget(model), 'some'],
    ['ListParams', () => listParamsTarget(model), 'some'],
    ['GetShardStatus', () => emptyRequestTarget('GetShardStatus'), 'some'],
    ['SaveCheckpoint', () => emptyRequestTarget('SaveCheckpoint'), 'some'],
    // Once initialized, the shard takes no new tensor and no second FinishInitParams.
    ['InitParam after initialization', () => initParamTarget(model), 'none'],
    ['FinishInitParams after initialization', () => finishInitParamsTarget(model), 'none'],
    ['InitTable after initialization', () => initTableTarget(model), 'none'],
    ['GetRows', () => getRowsTarget(model), 'some'],
    // A standalone pserver has no master to give its shard to: every Drain is refused.
    ['Drain', () => emptyRequestTarget('Drain'), 'none'],
  ] as const)(
    '%s: documented answers, refusals change nothing',
    async (_name, target, accepted) => {
      const report = await fuzz(target());
      if (accepted === 'none') expect(report.accepted).toBe(0);
      else if (coverageChecked) expect(report.accepted).toBeGreaterThan(0);
    },
    timeoutMs,
  );

  // A standalone pserver is no shard's primary and no replica: every replication call is refused.
  it.each(['ForwardStream', 'ReplicaLoaded', 'FetchSnapshot'])(
    'Replication %s from a peer it does not replicate with: refused, changes nothing',
    async (method) => {
      const target = replicationTargets(model).find((t) => t.method === method)!;
      const report = await fuzzRpc(target, subject.asService(serviceNames.replication), {
        seed,
        // Forwards carry gradients of up to megabytes, each refused the same way.
        runs: method === 'ForwardStream' ? Math.ceil(runs / 4) : runs,
        fullEvery: 10,
      });
      reports.push(report);
      expect(report.accepted).toBe(0);
      if (coverageChecked)
        expect(report.answers['FAILED_PRECONDITION PSERVER_NOT_REPLICA']).toBeGreaterThan(0);
    },
    timeoutMs,
  );

  it('stays up with its memory bounded', async () => {
    await subject.checkAlive();
    const rss = residentBytes(pserver.process.pid);
    const shard = await subject.status();
    summary.push(
      ...reports.map(describeReport),
      `the shard: ${(shard.tensors as unknown[]).length} tensors, ${String(shard.totalBytes)} bytes, ${String(shard.updatesApplied)} updates applied`,
      `RSS ${(rssAtStart / mib).toFixed(0)} MiB at start, ${(rss / mib).toFixed(0)} MiB at the end`,
    );
    expect(rss).toBeLessThan(rssAtStart + rssGrowthBoundBytes);
  });
});
