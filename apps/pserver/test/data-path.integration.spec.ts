import http2 from 'node:http2';
import {
  messageType,
  type OptimizerConfig,
  type RequestContext,
  type SendGradsChunk,
} from '@pserver/proto';
import {
  bytesAsHex,
  bytesOf,
  PserverDriver,
  startPserverProcess,
  stopAllProcesses,
  type PserverProcess,
} from '@pserver/testing';

afterAll(stopAllProcesses);

/**
 * Tensors of sizes that take every way through the data path: a 1 KiB one (its pull reply from
 * Node's own pool), 64 KiB (the smallest pooled reply), an odd size (a pooled buffer larger than
 * the reply) and 1 MiB ones (pushed in many DATA frames).
 */
const tensors = [
  { name: 't1', elements: 256 },
  { name: 't2', elements: 16_384 },
  { name: 't3', elements: 300_001 },
  { name: 't4', elements: 262_144 },
  { name: 't5', elements: 262_144 },
];
const sgd: OptimizerConfig = { sgd: {}, learningRate: { base: 1 } };

/** Every element of tensor `t` starts ≡ t (mod 16); gradients are multiples of 16. */
function initial(t: number, elements: number): Float32Array {
  return Float32Array.from({ length: elements }, (_, i) => 1_000_000 + t + 16 * (i % 7));
}

/** A push's gradient: 16·(c + i mod 5), with `c` particular to the tensor, trainer and step. */
function gradient(t: number, trainer: number, step: number, elements: number): Float32Array {
  const c = ((t * 7919 + trainer * 104_729 + step * 31) % 50) + 1;
  return Float32Array.from({ length: elements }, (_, i) => 16 * (c + (i % 5)));
}

/**
 * Whether `values` is a state tensor `t` can be in: every element ≡ t (mod 16) (no byte of
 * another tensor), and (initial − value)/16 = C + n·(i mod 5) for one C and n (every element
 * saw the same pushes: no half-applied push in the reply).
 */
function consistent(t: number, values: Float32Array): string | undefined {
  const start = initial(t, values.length);
  const d = values.map((v, i) => (start[i]! - v) / 16);
  for (let i = 0; i < values.length; i++)
    if (((values[i]! % 16) + 16) % 16 !== t)
      return `element ${i} = ${values[i]} is not ≡ ${t} (mod 16)`;
  const base = d[0]!;
  const n = values.length > 1 ? d[1]! - base : 0;
  for (let i = 0; i < values.length; i++)
    if (d[i] !== base + n * (i % 5)) return `element ${i} is torn (d = ${d[i]}, C ${base} n ${n})`;
  return undefined;
}

describe('the data path under interleaved pushes and pulls', () => {
  let pserver: PserverProcess;
  /** Three connections that push (pieces of different calls interleave on each) and one that pulls. */
  const drivers: PserverDriver[] = [];
  let puller: PserverDriver;
  let context: RequestContext;

  beforeAll(async () => {
    pserver = await startPserverProcess(['--checkpoint-interval-s', '3600']);
    for (let i = 0; i < 3; i++)
      drivers.push(new PserverDriver(pserver.address, { ownConnection: true }));
    puller = new PserverDriver(pserver.address, { ownConnection: true });
    context = { shardEpoch: await drivers[0]!.epoch() };
    for (const [t, { name, elements }] of tensors.entries()) {
      await drivers[0]!.initParam(
        context,
        { name, elementType: 'ELEMENT_TYPE_FLOAT32', content: bytesOf(initial(t, elements)) },
        sgd,
      );
    }
    await drivers[0]!.finishInitParams(context);
  });

  afterAll(async () => {
    for (const driver of drivers) driver.close();
    puller?.close();
    await pserver?.process.stop();
  });

  it('never lets one call’s bytes into another’s: every push lands whole, every pull is its own tensor', async () => {
    const trainers = 6;
    const steps = 6;
    const expected = tensors.map(({ elements }, t) => initial(t, elements));
    const pulls: Promise<string | undefined>[] = [];
    const pushers = Array.from({ length: trainers }, async (_, k) => {
      const trainer = k + 1;
      const driver = drivers[k % drivers.length]!;
      for (let step = 1; step <= steps; step++) {
        // Each push carries every tensor; odd trainers stream it in pieces of odd sizes.
        const grads = tensors.map(({ name, elements }, t) => ({
          name,
          bytes: bytesOf(gradient(t, trainer, step, elements)),
        }));
        const at = { ...context, trainerId: trainer, step };
        const reply =
          trainer % 2 === 0
            ? await driver.sendGrads(
                at,
                grads.map(({ name, bytes }) => ({
                  name,
                  elementType: 'ELEMENT_TYPE_FLOAT32' as const,
                  content: bytes,
                })),
              )
            : await driver.sendGradsStream(pieces(at, grads, 40_000 + 777 * trainer));
        expect(reply.outcome).toBe('PUSH_OUTCOME_APPLIED');
        for (const [t, { elements }] of tensors.entries()) {
          const g = gradient(t, trainer, step, elements);
          for (let i = 0; i < elements; i++) expected[t]![i]! -= g[i]!;
        }
        // Pulls of every tensor, in one call and one by one, while other pushes arrive.
        const names = tensors.map((t) => t.name);
        pulls.push(
          puller
            .getParams(context, names)
            .then((pulled) =>
              pulled.params
                .map((p, t) => consistent(t, new Float32Array(Uint8Array.from(p.content).buffer)))
                .find((problem) => problem !== undefined),
            ),
          ...names.map((name, t) =>
            puller
              .getParams(context, [name])
              .then((pulled) =>
                consistent(t, new Float32Array(Uint8Array.from(pulled.params[0]!.content).buffer)),
              ),
          ),
        );
      }
    });
    await Promise.all(pushers);
    expect((await Promise.all(pulls)).filter((problem) => problem !== undefined)).toEqual([]);
    const final = await puller.getParams(
      context,
      tensors.map((t) => t.name),
    );
    final.params.forEach((p, t) => {
      expect(Buffer.from(p.content).equals(bytesOf(expected[t]!))).toBe(true);
    });
  });
});

/** A streamed push: the gradients' bytes cut in pieces of `size`, several pieces per message. */
function* pieces(
  context: RequestContext,
  grads: { name: string; bytes: Buffer }[],
  size: number,
): Generator<SendGradsChunk> {
  let chunk: SendGradsChunk = { context, grads: [] };
  for (const { name, bytes } of grads) {
    for (let offset = 0; offset < bytes.length; offset += size) {
      chunk.grads!.push({
        name,
        elementType: 'ELEMENT_TYPE_FLOAT32',
        offset,
        content: bytes.subarray(offset, offset + size),
      });
      if (chunk.grads!.length === 3) {
        yield chunk;
        chunk = { grads: [] };
      }
    }
  }
  if (chunk.grads!.length > 0) yield chunk;
}

describe('the data path and grpc-js', () => {
  it('answer the same pushes and pulls with the same bytes, refusals included', async () => {
    const results: string[] = [];
    for (const dataPath of ['direct', 'grpc-js']) {
      const pserver = await startPserverProcess(['--data-path', dataPath]);
      const driver = new PserverDriver(pserver.address, { ownConnection: true });
      try {
        results.push(JSON.stringify(await exercise(driver)));
      } finally {
        driver.close();
        await pserver.process.stop();
      }
    }
    expect(results[0]).toEqual(results[1]);
    // The sequence reaches what it is meant to: applied pushes, and each refusal.
    for (const expected of [
      'PUSH_OUTCOME_APPLIED',
      'PUSH_OUTCOME_DUPLICATE',
      'PSERVER_STALE_EPOCH',
      'PSERVER_LENGTH_MISMATCH',
      'PSERVER_UNKNOWN_TENSOR',
      'PSERVER_NON_FINITE_GRADIENT',
    ])
      expect(results[0]).toContain(expected);
  });
});

/** A fixed sequence of calls; what each answered (values as hex, errors as codes). */
async function exercise(driver: PserverDriver): Promise<unknown[]> {
  const context = { shardEpoch: await driver.epoch() };
  const adam: OptimizerConfig = { adam: {}, learningRate: { base: 0.01 } };
  const values = (n: number, seed: number): Buffer =>
    bytesOf(Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 7 + i) / 3));
  await driver.initParam(
    context,
    { name: 'a', elementType: 'ELEMENT_TYPE_FLOAT32', shape: [64, 50], content: values(3200, 1) },
    adam,
  );
  await driver.initParam(
    context,
    { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT32', content: values(7, 2) },
    adam,
  );
  await driver.finishInitParams(context);
  const answers: unknown[] = [];
  const record = async (call: () => Promise<unknown>): Promise<void> => {
    try {
      answers.push(bytesAsHex(await call()));
    } catch (err) {
      const { status, code, message } = err as { status: number; code: string; message: string };
      answers.push({ status, code, message });
    }
  };
  for (let step = 1; step <= 4; step++) {
    const at = { ...context, trainerId: 5, step };
    await record(() =>
      driver.sendGrads(at, [
        {
          name: 'a',
          elementType: 'ELEMENT_TYPE_FLOAT32',
          shape: [64, 50],
          content: values(3200, step),
        },
        { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT32', content: values(7, step + 10) },
      ]),
    );
    await record(() =>
      driver.sendGradsStream(
        pieces(
          { ...context, trainerId: 6, step },
          [{ name: 'a', bytes: values(3200, step + 20) }],
          1000,
        ),
      ),
    );
  }
  // A duplicate, a stale epoch, a wrong length, an unknown tensor, a NaN: refused the same way.
  await record(() =>
    driver.sendGrads({ ...context, trainerId: 5, step: 2 }, [
      { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT32', content: values(7, 1) },
    ]),
  );
  await record(() =>
    driver.sendGrads({ shardEpoch: 0, trainerId: 5, step: 9 }, [
      { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT32', content: values(7, 1) },
    ]),
  );
  await record(() =>
    driver.sendGrads({ ...context, trainerId: 5, step: 9 }, [
      { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT32', content: values(6, 1) },
    ]),
  );
  await record(() =>
    driver.sendGrads({ ...context, trainerId: 5, step: 9 }, [
      { name: 'zz', elementType: 'ELEMENT_TYPE_FLOAT32', content: values(7, 1) },
    ]),
  );
  await record(() =>
    driver.sendGrads({ ...context, trainerId: 5, step: 9 }, [
      {
        name: 'b',
        elementType: 'ELEMENT_TYPE_FLOAT32',
        content: bytesOf(new Float32Array(7).fill(NaN)),
      },
    ]),
  );
  await record(() => driver.getParams(context, ['a', 'b']));
  await record(() => driver.getParams(context, ['b', 'nope']));
  return answers;
}

describe('the data path and raw HTTP/2 peers', () => {
  let pserver: PserverProcess;
  let driver: PserverDriver;
  let context: RequestContext;

  beforeAll(async () => {
    pserver = await startPserverProcess();
    driver = new PserverDriver(pserver.address, { ownConnection: true });
    context = { shardEpoch: await driver.epoch() };
    await driver.initParam(
      context,
      { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: bytesOf(new Float32Array(4)) },
      sgd,
    );
    await driver.finishInitParams(context);
  });

  afterAll(async () => {
    driver?.close();
    await pserver?.process.stop();
  });

  /** A push of `w` += 1 (learning rate 1) at `step`, as one length-prefixed gRPC message. */
  const push = (step: number): Buffer => {
    const Request = messageType('SendGradsRequest');
    const message = Request.encode(
      Request.fromObject({
        context: { ...context, trainerId: 3, step },
        grads: [{ name: 'w', elementType: 5, content: bytesOf(new Float32Array(4).fill(-1)) }],
      }),
    ).finish();
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(message.length, 1);
    return Buffer.concat([prefix, message]);
  };

  /** Sends `body` on a new call and, before the end of the request, resets the stream. */
  const resetAfter = async (path: string, body: Buffer): Promise<void> => {
    const session = http2.connect(`http://${pserver.address}`);
    const stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    stream.on('error', () => undefined);
    stream.write(body);
    await new Promise((resolve) => setTimeout(resolve, 100));
    stream.close(http2.constants.NGHTTP2_NO_ERROR);
    await new Promise((resolve) => stream.once('close', resolve));
    session.close();
  };

  it('lives through calls reset with NO_ERROR, applying each push at most once', async () => {
    await resetAfter('/pserver.v1.ParameterServer/SendGrads', push(1));
    await resetAfter('/pserver.v1.ParameterServer/SendGradsStream', push(2));
    await resetAfter('/pserver.v1.ParameterServer/GetParams', Buffer.alloc(3));
    await resetAfter('/pserver.v1.ParameterServer/GetParams', Buffer.from([0, 0, 0]));
    expect(pserver.process.running).toBe(true);
    // A reset call may or may not have been applied (as through grpc-js), never twice.
    const pulled = await driver.getParams(context, ['w']);
    const [value] = new Float32Array(Uint8Array.from(pulled.params[0]!.content).buffer);
    expect([0, 1, 2]).toContain(value);
  });

  it('takes a deadline beyond what a timer holds as far away, not as passed', async () => {
    const session = http2.connect(`http://${pserver.address}`);
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/pserver.v1.ParameterServer/SendGrads',
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': '99999999S',
      });
      const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) =>
        stream.once('trailers', resolve),
      );
      stream.resume();
      stream.end(push(5));
      expect((await trailers)['grpc-status']).toBe('0');
    } finally {
      session.close();
    }
  });
});
