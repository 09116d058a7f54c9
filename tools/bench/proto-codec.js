#!/usr/bin/env node
// Encode/decode of a SendGradsRequest holding one 16 MiB tensor, each way, with the two ways
// TypeScript can use the contract: proto-loader (protobufjs reflection; what libs/proto uses) and
// protobufjs static code (pbjs, fetched from the npm registry for this measurement only). A plain
// Buffer copy of the same bytes is the baseline.
//
//   node tools/bench/proto-codec.js
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const protoLoader = require('@grpc/proto-loader');
const loaderOptions = { longs: Number, enums: String, defaults: true, oneofs: true };
const descriptor = require('../../libs/proto/src/generated/descriptor.json');

const root = path.join(__dirname, '..', '..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pserver-bench-'));
const staticFile = path.join(tmp, 'static.js');
execFileSync(
  'npx',
  [
    '--yes',
    '-p',
    'protobufjs-cli@1.1.3',
    'pbjs',
    '-t',
    'static-module',
    '-w',
    'commonjs',
    '-p',
    path.join(root, 'proto'),
    '-o',
    staticFile,
    path.join(root, 'proto', 'pserver', 'v1', 'parameter_server.proto'),
  ],
  { stdio: 'inherit', env: { ...process.env, NODE_PATH: path.join(root, 'node_modules') } },
);
// The static module requires "protobufjs/minimal": resolve it from the workspace.
fs.writeFileSync(
  staticFile,
  fs
    .readFileSync(staticFile, 'utf8')
    .replace(
      'require("protobufjs/minimal")',
      `require(${JSON.stringify(require.resolve('protobufjs/minimal'))})`,
    ),
);
const StaticRequest = require(staticFile).pserver.v1.SendGradsRequest;
// The same options as libs/proto/src/loader-options.ts.
const loaderRequest = protoLoader.fromJSON(descriptor, loaderOptions)[
  'pserver.v1.SendGradsRequest'
];

const bytes = 16 * 1024 * 1024;
const content = Buffer.alloc(bytes, 7);
const context = { trainerId: 1, step: 2, shardEpoch: 3 };
const loaderValue = {
  context,
  grads: [{ name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content }],
};
const staticValue = { context, grads: [{ name: 'w', elementType: 5, content }] };
const loaderBytes = loaderRequest.serialize(loaderValue);
const staticBytes = StaticRequest.encode(staticValue).finish();
if (Buffer.compare(Buffer.from(loaderBytes), Buffer.from(staticBytes)) !== 0)
  throw new Error('encodings differ');

// Minimum and median over many runs: each encode allocates 16 MiB, and whether the garbage
// collector runs inside a measured call makes single runs bimodal.
function timesMs(fn, runs = 60) {
  for (let i = 0; i < 5; i++) fn();
  const times = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { min: times[0], median: times[runs >> 1] };
}

const baseline = timesMs(() => Buffer.from(content));
const rows = [
  ['Buffer copy (baseline)', baseline],
  ['proto-loader serialize', timesMs(() => loaderRequest.serialize(loaderValue))],
  ['static encode', timesMs(() => StaticRequest.encode(staticValue).finish())],
  ['proto-loader deserialize', timesMs(() => loaderRequest.deserialize(loaderBytes))],
  ['static decode', timesMs(() => StaticRequest.decode(staticBytes))],
];
console.log(
  `${'16 MiB tensor'.padEnd(26)} ${'min ms'.padStart(8)} ${'median ms'.padStart(10)}  min vs copy`,
);
for (const [label, { min, median }] of rows) {
  console.log(
    `${label.padEnd(26)} ${min.toFixed(3).padStart(8)} ${median.toFixed(3).padStart(10)}  ${(min / baseline.min).toFixed(2)}x`,
  );
}
fs.rmSync(tmp, { recursive: true, force: true });
