/**
 * Push and pull throughput of one pserver process, from this (client) process, on loopback: a
 * 64 MiB float32 tensor in 16 blocks of 4 MiB, one push per step (every step a new step number,
 * each applied with SGD), and one GetParams of all blocks per step. Next to it, measured in the
 * same run with the same bytes per step: a raw Node.js `net` stream and a bare grpc-js service
 * (identity serializers, the same raised windows) in their own processes. Then the pserver again
 * under mutual TLS with the access check, as a secured job runs it.
 *
 *   npx nx run tools:bench-pserver
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  credentials,
  makeGenericClientConstructor,
  Metadata,
  type Client,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import {
  bindServer,
  clientChannelOptions,
  createGrpcServer,
  loadClientSecurity,
  type ClientSecurity,
} from '@pserver/rpc';
import {
  bytesOf,
  generateCertificates,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
} from '@pserver/testing';

const mib = 1024 * 1024;
const stepBytes = 64 * mib;
const blockBytes = 4 * mib;
const blocks = stepBytes / blockBytes;
const warmupSteps = 2;
const steps = 12;
const transport = { maxMessageBytes: 128 * mib, flowControlWindowBytes: 32 * mib };

const identity = (b: Buffer): Buffer => b;
const benchService: ServiceDefinition = {
  push: {
    path: '/bench.Bench/Push',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
  pull: {
    path: '/bench.Bench/Pull',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

// ---- helper processes ---------------------------------------------------------------------

/** Reads `stepBytes` per step and answers one byte, so each step is a round trip. */
function tcpSink(): void {
  const server = net.createServer((socket) => {
    let received = 0;
    socket.on('data', (chunk) => {
      received += chunk.length;
      while (received >= stepBytes) {
        received -= stepBytes;
        socket.write(Buffer.from([1]));
      }
    });
  });
  server.listen(0, '127.0.0.1', () =>
    process.send?.({ port: (server.address() as net.AddressInfo).port }),
  );
}

/** A bare grpc-js server: Push takes the bytes and answers nothing; Pull answers the bytes. */
async function grpcBaseline(): Promise<void> {
  const server = createGrpcServer(transport);
  const payload = Buffer.alloc(stepBytes, 7);
  server.addService(benchService, {
    push: (_call: unknown, callback: (err: null, reply: Buffer) => void) =>
      callback(null, Buffer.alloc(0)),
    pull: (_call: unknown, callback: (err: null, reply: Buffer) => void) => callback(null, payload),
  });
  const port = await bindServer(server, '127.0.0.1', 0);
  process.send?.({ port });
}

function startHelper(role: string): Promise<{ port: number; stop: () => void }> {
  const child = fork(__filename, [role], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('message', (message: { port: number }) =>
      resolve({ port: message.port, stop: () => child.kill('SIGKILL') }),
    );
    child.once('error', reject);
  });
}

// ---- measurements -------------------------------------------------------------------------

async function timeSteps(step: (i: number) => Promise<void>): Promise<number> {
  for (let i = 0; i < warmupSteps; i++) await step(i);
  const start = performance.now();
  for (let i = warmupSteps; i < warmupSteps + steps; i++) await step(i);
  const seconds = (performance.now() - start) / 1000;
  return (stepBytes * steps) / seconds / 1e9;
}

async function measureTcp(port: number): Promise<number> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const payload = Buffer.alloc(stepBytes, 7);
  let acks = 0;
  let waiting: (() => void) | undefined;
  socket.on('data', (chunk) => {
    acks += chunk.length;
    waiting?.();
  });
  const rate = await timeSteps(async (i) => {
    socket.write(payload);
    while (acks <= i) await new Promise<void>((resolve) => (waiting = resolve));
  });
  socket.destroy();
  return rate;
}

async function measureGrpc(port: number): Promise<{ push: number; pull: number }> {
  const Bench = makeGenericClientConstructor(benchService, 'Bench');
  const client = new Bench(
    `127.0.0.1:${port}`,
    credentials.createInsecure(),
    clientChannelOptions(transport),
  ) as unknown as Client &
    Record<
      'push' | 'pull',
      (req: Buffer, md: Metadata, cb: (err: Error | null, reply?: Buffer) => void) => void
    >;
  const call = (method: 'push' | 'pull', request: Buffer): Promise<void> =>
    new Promise((resolve, reject) =>
      client[method](request, new Metadata(), (err) => (err ? reject(err) : resolve())),
    );
  const payload = Buffer.alloc(stepBytes, 7);
  const push = await timeSteps(() => call('push', payload));
  const pull = await timeSteps(() => call('pull', Buffer.alloc(0)));
  client.close();
  return { push, pull };
}

/** Mutual TLS with a trainer certificate and the access check, as a secured job runs. */
function mutualTls(): { serverArgs: string[]; security: ClientSecurity } {
  const certs = generateCertificates();
  const authConfig = path.join(certs.dir, 'auth.json');
  fs.writeFileSync(
    authConfig,
    JSON.stringify({ clientCertificates: [{ ou: 'trainers', role: 'trainer' }] }),
  );
  return {
    serverArgs: [
      ...['--tls-cert', certs.server.cert, '--tls-key', certs.server.key],
      ...['--tls-client-ca', certs.ca, '--auth-config', authConfig],
    ],
    security: loadClientSecurity({
      caFile: certs.ca,
      certFile: certs.trainer.cert,
      keyFile: certs.trainer.key,
    }),
  };
}

async function measurePserver(
  tls?: ReturnType<typeof mutualTls>,
): Promise<{ push: number; stream: number; pull: number }> {
  const pserver = await startPserverProcess(
    ['--max-message-mb', '128', '--flow-control-window-mb', '32', ...(tls?.serverArgs ?? [])],
    {
      name: 'bench-pserver',
    },
  );
  const driver = new PserverDriver(pserver.address, { ...transport, security: tls?.security });
  const epoch = await driver.epoch();
  const context = { trainerId: 1, shardEpoch: epoch };
  const names = Array.from({ length: blocks }, (_, k) => `w@${k}`);
  const block = new Float32Array(blockBytes / 4).fill(0.5);
  for (const name of names) {
    await driver.initParam(
      context,
      { name, elementType: 'ELEMENT_TYPE_FLOAT32', content: bytesOf(block) },
      { learningRate: { base: 0.01 } },
    );
  }
  await driver.finishInitParams(context);
  const gradient = bytesOf(new Float32Array(blockBytes / 4).fill(1e-6));
  const grads = names.map((name) => ({
    name,
    elementType: 'ELEMENT_TYPE_FLOAT32' as const,
    content: gradient,
  }));
  let step = 0;
  const push = await timeSteps(async () => {
    const reply = await driver.sendGrads({ ...context, step: ++step }, grads);
    if (reply.outcome !== 'PUSH_OUTCOME_APPLIED') throw new Error(`push ${step}: ${reply.outcome}`);
  });
  const stream = await timeSteps(async () => {
    const stepNumber = ++step;
    const reply = await driver.sendGradsStream(
      names.map((name, k) => ({
        context: k === 0 ? { ...context, step: stepNumber } : undefined,
        grads: [
          { name, elementType: 'ELEMENT_TYPE_FLOAT32' as const, offset: 0, content: gradient },
        ],
      })),
    );
    if (reply.outcome !== 'PUSH_OUTCOME_APPLIED')
      throw new Error(`streamed push ${stepNumber}: ${reply.outcome}`);
  });
  const pull = await timeSteps(async () => {
    const reply = await driver.getParams(context, names);
    if (reply.params.length !== blocks) throw new Error('GetParams returned too few blocks');
  });
  driver.close();
  await pserver.process.stop();
  return { push, stream, pull };
}

async function main(): Promise<void> {
  const tcp = await startHelper('tcp-sink');
  const tcpRate = await measureTcp(tcp.port);
  tcp.stop();
  const grpc = await startHelper('grpc-baseline');
  const grpcRates = await measureGrpc(grpc.port);
  grpc.stop();
  const pserver = await measurePserver();
  const secured = await measurePserver(mutualTls());
  await stopAllProcesses();

  const row = (name: string, rate: number, baseline: number): string =>
    `${name.padEnd(46)} ${rate.toFixed(2).padStart(6)} GB/s  ${(rate / baseline).toFixed(2).padStart(5)}x grpc  ${(rate / tcpRate).toFixed(2).padStart(5)}x tcp`;
  console.log(
    `64 MiB per step (16 blocks of 4 MiB), ${steps} steps after ${warmupSteps} warm-up, loopback, separate processes`,
  );
  console.log(row('raw TCP (net), one way', tcpRate, grpcRates.push));
  console.log(row('bare grpc-js unary, upload (baseline)', grpcRates.push, grpcRates.push));
  console.log(row('bare grpc-js unary, download (baseline)', grpcRates.pull, grpcRates.pull));
  console.log(row('pserver SendGrads + SGD update', pserver.push, grpcRates.push));
  console.log(row('pserver SendGradsStream (4 MiB chunks) + SGD', pserver.stream, grpcRates.push));
  console.log(row('pserver GetParams', pserver.pull, grpcRates.pull));
  console.log(row('pserver SendGrads + SGD, mutual TLS', secured.push, grpcRates.push));
  console.log(row('pserver SendGradsStream + SGD, mutual TLS', secured.stream, grpcRates.push));
  console.log(row('pserver GetParams, mutual TLS', secured.pull, grpcRates.pull));
}

const role = process.argv[2];
if (role === 'tcp-sink') tcpSink();
else if (role === 'grpc-baseline') void grpcBaseline();
else
  main().catch(async (err: unknown) => {
    console.error(err);
    await stopAllProcesses();
    process.exit(1);
  });
