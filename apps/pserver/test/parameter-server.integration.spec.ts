import http2 from 'node:http2';
import net from 'node:net';
import { status } from '@grpc/grpc-js';
import type { RequestContext, Tensor } from '@pserver/proto';
import { RpcError } from '@pserver/rpc';
import {
  appBundle,
  bytesOf,
  float32s,
  float64s,
  PserverDriver,
  spawnNode,
  startPserverProcess,
  stopAllProcesses,
  type PserverProcess,
} from '@pserver/testing';

afterAll(stopAllProcesses);

function rejection(promise: Promise<unknown>): Promise<RpcError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (err: unknown) => {
      if (!(err instanceof RpcError)) throw err;
      return err;
    },
  );
}

const f32 = (values: number[]): Buffer => bytesOf(new Float32Array(values));
const f64 = (values: number[]): Buffer => bytesOf(new Float64Array(values));

describe('a pserver over real gRPC', () => {
  let pserver: PserverProcess;
  let driver: PserverDriver;
  let context: RequestContext;
  let epoch: number;

  beforeAll(async () => {
    pserver = await startPserverProcess(['--max-message-mb', '4']);
    driver = new PserverDriver(pserver.address);
    epoch = await driver.epoch();
    context = { trainerId: 42, shardEpoch: epoch };
  });

  afterAll(async () => {
    driver?.close();
    await pserver?.process.stop();
  });

  it('times GetParams out at its deadline while the shard is not initialized', async () => {
    const started = performance.now();
    const error = await rejection(driver.getParams(context, ['w'], 300));
    expect(error.status).toBe(status.DEADLINE_EXCEEDED);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('refuses pushes before initialization', async () => {
    const error = await rejection(driver.sendGrads({ ...context, step: 1 }, [{ name: 'w' }]));
    expect(error).toMatchObject({
      status: status.FAILED_PRECONDITION,
      code: 'PSERVER_NOT_INITIALIZED',
    });
  });

  it('initializes tensors of three element types, applies pushes and returns exact values', async () => {
    await driver.initParam(
      context,
      { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', shape: [2, 2], content: f32([1, 2, 3, 4]) },
      {
        sgd: { momentum: 0.5 },
        learningRate: { base: 0.5 },
      },
    );
    await driver.initParam(
      context,
      { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT64', content: f64([0.25, -8]) },
      { sgd: {}, learningRate: { base: 1 } },
    );
    await driver.initParam(context, {
      name: 'ids',
      elementType: 'ELEMENT_TYPE_INT32',
      content: bytesOf(new Int32Array([7, -7, 2 ** 31 - 1])),
    });
    await driver.finishInitParams(context);
    expect(await rejection(driver.finishInitParams(context))).toMatchObject({
      status: status.FAILED_PRECONDITION,
      code: 'PSERVER_ALREADY_INITIALIZED',
    });

    const grads = (step: number): Tensor[] => [
      { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([2, 2, 2, 2]) },
      { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT64', content: f64([step, step]) },
    ];
    expect(await driver.sendGrads({ ...context, step: 1 }, grads(1))).toMatchObject({
      outcome: 'PUSH_OUTCOME_APPLIED',
      lastAppliedStep: 1,
    });
    expect(await driver.sendGrads({ ...context, step: 2 }, grads(2))).toMatchObject({
      outcome: 'PUSH_OUTCOME_APPLIED',
    });

    const reply = await driver.getParams(context, ['w', 'b', 'ids']);
    // Momentum 0.5, lr 0.5, g = 2: v = −1 then −1.5; w = w − 1 − 1.5.
    expect(float32s(reply.params[0]!.content)).toEqual([-1.5, -0.5, 0.5, 1.5]);
    expect(reply.params[0]!.shape).toEqual([2, 2]);
    // Plain SGD, lr 1: b − 1 − 2.
    expect(float64s(reply.params[1]!.content)).toEqual([-2.75, -11]);
    expect([...new Int32Array(Uint8Array.from(reply.params[2]!.content).buffer)]).toEqual([
      7,
      -7,
      2 ** 31 - 1,
    ]);
    expect(reply.shardEpoch).toBe(epoch);
  });

  it('acknowledges a repeated step as a duplicate and does not apply it again', async () => {
    const before = await driver.getParams(context, ['w', 'b']);
    const reply = await driver.sendGrads({ ...context, step: 2 }, [
      { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([9, 9, 9, 9]) },
    ]);
    expect(reply).toMatchObject({ outcome: 'PUSH_OUTCOME_DUPLICATE', lastAppliedStep: 2 });
    const after = await driver.getParams(context, ['w', 'b']);
    expect(after.params.map((p) => p.content.toString('hex'))).toEqual(
      before.params.map((p) => p.content.toString('hex')),
    );
  });

  it('applies a streamed push only when the stream completes', async () => {
    const reply = await driver.sendGradsStream([
      {
        context: { ...context, step: 3 },
        grads: [{ name: 'b', elementType: 'ELEMENT_TYPE_FLOAT64', offset: 0, content: f64([1]) }],
      },
      { grads: [{ name: 'b', elementType: 'ELEMENT_TYPE_FLOAT64', offset: 8, content: f64([1]) }] },
    ]);
    expect(reply).toMatchObject({ outcome: 'PUSH_OUTCOME_APPLIED', lastAppliedStep: 3 });
    expect(float64s((await driver.getParams(context, ['b'])).params[0]!.content)).toEqual([
      -3.75, -12,
    ]);
  });

  it('answers a stale shard epoch ABORTED with the current epoch in the trailers', async () => {
    const error = await rejection(driver.getParams({ ...context, shardEpoch: epoch - 1 }, ['w']));
    expect(error).toMatchObject({
      status: status.ABORTED,
      code: 'PSERVER_STALE_EPOCH',
      facts: { shardEpoch: epoch },
    });
  });

  describe('bad input', () => {
    let before: string[];

    beforeAll(async () => {
      before = (await driver.getParams(context, ['w', 'b', 'ids'])).params.map((p) =>
        p.content.toString('hex'),
      );
    });

    afterEach(async () => {
      // The process is up and every byte of the shard is as it was.
      expect(pserver.process.running).toBe(true);
      const now = await driver.getParams(context, ['w', 'b', 'ids']);
      expect(now.params.map((p) => p.content.toString('hex'))).toEqual(before);
    });

    const push = (grads: Tensor[]) => driver.sendGrads({ ...context, step: 100 }, grads);
    const good: Tensor = { name: 'b', elementType: 'ELEMENT_TYPE_FLOAT64', content: f64([1, 1]) };

    it.each<[string, Tensor, string]>([
      [
        'a wrong element type',
        { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT64', content: f64([1, 1]) },
        'PSERVER_ELEMENT_TYPE_MISMATCH',
      ],
      [
        'a wrong length',
        { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([1, 1, 1]) },
        'PSERVER_LENGTH_MISMATCH',
      ],
      [
        'an unknown name',
        { name: 'nope', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([1]) },
        'PSERVER_UNKNOWN_TENSOR',
      ],
      [
        'a NaN',
        { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([0, 0, Number.NaN, 0]) },
        'PSERVER_NON_FINITE_GRADIENT',
      ],
      [
        'an empty name',
        { name: '', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([1]) },
        'PSERVER_INVALID_NAME',
      ],
      [
        'a gradient for an integer tensor',
        { name: 'ids', elementType: 'ELEMENT_TYPE_INT32', content: bytesOf(new Int32Array(3)) },
        'PSERVER_NOT_OPTIMIZABLE',
      ],
    ])(
      'refuses %s with INVALID_ARGUMENT or NOT_FOUND and a message naming it',
      async (_what, bad, code) => {
        const error = await rejection(push([good, bad]));
        expect(error.code).toBe(code);
        expect([status.INVALID_ARGUMENT, status.NOT_FOUND]).toContain(error.status);
        expect(error.message).toContain(bad.name === '' ? '""' : bad.name);
      },
    );

    it('refuses a gradient of a transposed shape, unary or streamed, naming both shapes', async () => {
      const transposed = {
        name: 'w',
        elementType: 'ELEMENT_TYPE_FLOAT32' as const,
        shape: [4, 1],
        content: f32([1, 1, 1, 1]),
      };
      const unary = await rejection(push([good, transposed]));
      const streamed = await rejection(
        driver.sendGradsStream([
          {
            context: { ...context, step: 100 },
            grads: [
              { ...good, offset: 0 },
              { ...transposed, content: f32([1, 1]), offset: 0 },
            ],
          },
          {
            grads: [
              { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', offset: 8, content: f32([1, 1]) },
            ],
          },
        ]),
      );
      for (const error of [unary, streamed]) {
        expect(error).toMatchObject({
          status: status.INVALID_ARGUMENT,
          code: 'PSERVER_SHAPE_MISMATCH',
          message: "gradient w: shape [4, 1], the parameter's shape is [2, 2]",
        });
      }
      // A 1-D shape equal to a flat vector's length is its shape (a zero gradient: no byte moves).
      expect(
        await driver.sendGrads({ ...context, step: 99 }, [
          { ...good, shape: [2], content: f64([0, 0]) },
        ]),
      ).toMatchObject({ outcome: 'PUSH_OUTCOME_APPLIED' });
    });

    it('refuses a message above the size limit with RESOURCE_EXHAUSTED', async () => {
      const error = await rejection(
        push([
          {
            name: 'w',
            elementType: 'ELEMENT_TYPE_FLOAT32',
            content: Buffer.alloc(5 * 1024 * 1024),
          },
        ]),
      );
      expect(error.status).toBe(status.RESOURCE_EXHAUSTED);
    });

    it('survives garbage bytes on its socket', async () => {
      const [host, port] = pserver.address.split(':') as [string, string];
      await new Promise<void>((resolve) => {
        const socket = net.connect(Number(port), host, () =>
          socket.end(Buffer.from('\x00\xffGARBAGE not http/2 at all\r\n\r\n'.repeat(100))),
        );
        socket.on('error', () => resolve());
        socket.on('close', () => resolve());
        socket.resume();
      });
    });

    it('survives a gRPC message that is not a valid protobuf', async () => {
      const session = http2.connect(`http://${pserver.address}`);
      const answer = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const request = session.request({
          ':method': 'POST',
          ':path': '/pserver.v1.ParameterServer/SendGrads',
          'content-type': 'application/grpc',
          te: 'trailers',
        });
        const body = Buffer.from([0xff, 0xfe, 0x07, 0x01, 0x99, 0x42, 0x00, 0x13]);
        const frame = Buffer.alloc(5);
        frame.writeUInt32BE(body.length, 1);
        request.end(Buffer.concat([frame, body]));
        // grpc-status comes in the trailers, or in the headers of a trailers-only answer.
        let answer: Record<string, unknown> = {};
        request.on('response', (h) => (answer = { ...answer, ...h }));
        request.on('trailers', (t) => (answer = { ...answer, ...t }));
        request.on('close', () => resolve(answer));
        request.on('error', reject);
        request.resume();
      });
      session.close();
      expect(answer['grpc-status']).toBeDefined();
      expect(Number(answer['grpc-status'])).not.toBe(status.OK);
    });
  });
});

describe('a pserver with a small message limit', () => {
  let pserver: PserverProcess;
  let driver: PserverDriver;

  afterAll(async () => {
    driver?.close();
    await pserver?.process.stop();
  });

  it('refuses a GetParams reply above --max-message-mb with PSERVER_REPLY_TOO_LARGE, not a retried RESOURCE_EXHAUSTED', async () => {
    pserver = await startPserverProcess(['--max-message-mb', '1']);
    // The driver's own limit is larger: what it sees is what the server answers.
    driver = new PserverDriver(pserver.address);
    const context = { trainerId: 1, shardEpoch: await driver.epoch() };
    // 600 KiB each: either fits in 1 MiB, both do not.
    const content = f32(new Array<number>(153_600).fill(0.5));
    for (const name of ['a', 'b']) {
      await driver.initParam(
        context,
        { name, elementType: 'ELEMENT_TYPE_FLOAT32', content },
        { sgd: {}, learningRate: { base: 1 } },
      );
    }
    await driver.finishInitParams(context);
    const error = await rejection(driver.getParams(context, ['a', 'b']));
    expect(error).toMatchObject({
      status: status.INVALID_ARGUMENT,
      code: 'PSERVER_REPLY_TOO_LARGE',
    });
    expect(error.message).toContain('the reply would hold 1228800 bytes of 2 tensors');
    expect(error.message).toContain("above the server's message limit of 1048576 bytes");
    for (const name of ['a', 'b']) {
      const reply = await driver.getParams(context, [name]);
      expect(reply.params[0]!.content.equals(content)).toBe(true);
    }
  });
});

describe('pserver shutdown', () => {
  it('answers a call in flight and exits 0 on SIGTERM', async () => {
    const pserver = await startPserverProcess([], { name: 'pserver-shutdown' });
    const driver = new PserverDriver(pserver.address);
    const epoch = await driver.epoch();
    // GetParams waits for initialization, which never comes: it is in flight at SIGTERM.
    const waiting = rejection(driver.getParams({ trainerId: 1, shardEpoch: epoch }, ['w']));
    await new Promise((r) => setTimeout(r, 200));
    const exited = pserver.process.stop();
    const error = await waiting;
    expect(error).toMatchObject({ status: status.UNAVAILABLE, code: 'PSERVER_SHUTTING_DOWN' });
    expect(await exited).toEqual({ code: 0, signal: null });
    driver.close();
  });

  it('refuses --index outside --shards at start, naming the flag', async () => {
    const child = spawnNode(appBundle('pserver'), ['--index', '2', '--shards', '2'], {
      name: 'pserver-bad-index',
    });
    expect((await child.exited).code).not.toBe(0);
    expect(child.lines.join('\n')).toContain(
      "option '--index <i>' must be below --shards (2), got 2",
    );
  });
});
