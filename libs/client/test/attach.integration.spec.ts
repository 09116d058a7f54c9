import {
  freePort,
  LocalCluster,
  startPserverProcess,
  stopAllProcesses,
  type PserverProcess,
} from '@pserver/testing';
import { connect, type PserverClient } from '../src';

afterAll(() => stopAllProcesses());

// A reader (an evaluator, a late process) that never calls initParams: it learns the model from
// the shards' ListParams and reads and pushes by name.
const w = Float32Array.from({ length: 12 }, (_, i) => i);
const b = Float64Array.of(0.5, 1.5, 2.5, 3.5, 4.5);
const optimizer = { sgd: {}, learningRate: { base: 0.5 } };

async function initialize(client: PserverClient): Promise<void> {
  await client.initParams(
    { w: { values: w, shape: [3, 4] }, b: { values: b, shape: [5] } },
    optimizer,
  );
}

async function attachAndCheck(reader: PserverClient): Promise<void> {
  const listed = await reader.listParams();
  expect(Object.keys(listed).sort()).toEqual(['b', 'w']);
  expect(listed.w).toMatchObject({
    elementType: 'ELEMENT_TYPE_FLOAT32',
    shape: [3, 4],
    length: 12,
  });
  expect(listed.b).toMatchObject({ elementType: 'ELEMENT_TYPE_FLOAT64', shape: [5], length: 5 });
  expect(listed.w!.optimizer?.learningRate?.base).toBe(0.5);
}

describe('attaching without initParams', () => {
  it('through a master: lists the model, reads it by name, pushes shaped gradients', async () => {
    const cluster = await LocalCluster.start({
      pservers: 2,
      masters: 1,
      leaseTtlSeconds: 2,
      blockSize: 4,
    });
    const clients: PserverClient[] = [];
    try {
      const trainer = await connect({ master: cluster.masterAddresses });
      clients.push(trainer);
      await initialize(trainer);

      // getParams of tensors it never heard of: it lists the model first.
      const evaluator = await connect({ master: cluster.masterAddresses });
      clients.push(evaluator);
      const read = await evaluator.getParams(['w', 'b']);
      expect(read.w).toEqual(w);
      expect(read.b).toEqual(b);

      const reader = await connect({ master: cluster.masterAddresses });
      clients.push(reader);
      await attachAndCheck(reader);
      await reader.step((ctx) =>
        ctx.sendGrads({ w: { values: new Float32Array(12).fill(2), shape: [3, 4] } }),
      );
      await expect(
        reader.step((ctx) => ctx.sendGrads({ w: { values: new Float32Array(12), shape: [4, 3] } })),
      ).rejects.toMatchObject({ code: 'CLIENT_SHAPE_MISMATCH' });
      const after = (await trainer.getParams(['w'], Float32Array)).w;
      expect([...after]).toEqual([...w].map((x) => x - 1));
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await cluster.stop();
    }
  });

  it('standalone: a second process reads the tensors another initialized', async () => {
    const ports = [await freePort(), await freePort()];
    const pservers: PserverProcess[] = await Promise.all(
      ports.map((port, i) =>
        startPserverProcess(['--port', String(port), '--index', String(i), '--shards', '2'], {
          name: `attach-standalone-${i}`,
        }),
      ),
    );
    const addresses = ports.map((port) => `127.0.0.1:${port}`);
    const writer = await connect({ pservers: addresses, blockSize: 4 });
    const reader = await connect({ pservers: addresses, blockSize: 4 });
    try {
      await initialize(writer);
      const { w: readW } = await reader.getParams(['w'], Float32Array);
      expect(readW).toEqual(w);
      await attachAndCheck(reader);
    } finally {
      await writer.close();
      await reader.close();
      await Promise.all(pservers.map((p) => p.process.stop()));
    }
  });
});
