import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startPserverProcess, stopAllProcesses, type PserverProcess } from '@pserver/testing';
import { connect, type PserverClient } from '../src';

afterAll(() => stopAllProcesses());

// 300 MiB of float32 on one pserver (its --max-message-mb default, the client's 64 MiB limit):
// no single message can carry the tensor, so pulls are split and pushes are streamed.
const elements = (300 * 1024 * 1024) / 4;

describe('a tensor far larger than a gRPC message, on one standalone pserver', () => {
  let pserver: PserverProcess;
  let metricsAddress: string;
  let client: PserverClient;
  let checkpointDir: string;

  beforeAll(async () => {
    // Checkpoints of 300 MiB go to memory where the machine has /dev/shm.
    const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
    checkpointDir = fs.mkdtempSync(path.join(base, 'pserver-large-'));
    pserver = await startPserverProcess(['--index', '0', '--shards', '1', '--metrics-port', '0'], {
      name: 'large-pserver',
      checkpointDir,
    });
    const line = await pserver.process.waitForLog((e) => e.msg === 'metrics listening', {
      timeoutMs: 10_000,
    });
    metricsAddress = String(line.address);
    client = await connect({ pservers: [pserver.address] });
  });

  afterAll(async () => {
    await client?.close();
    await pserver?.process.stop();
    if (checkpointDir) fs.rmSync(checkpointDir, { recursive: true, force: true });
  });

  const callsOf = async (method: string): Promise<number> => {
    const text = await (await fetch(`http://${metricsAddress}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('pserver_rpc_calls_total{') && l.includes(`method="${method}"`))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  };

  it('pulls 300 MiB back exactly, in several GetParams calls, and pushes 300 MiB as a stream', async () => {
    const initial = new Float32Array(elements);
    for (let i = 0; i < elements; i += 4099) initial[i] = i;
    initial[elements - 1] = -3;
    await client.initParams({ big: initial }, { sgd: {}, learningRate: { base: 1 } });

    const { big } = await client.getParams(['big'], Float32Array);
    expect(big.length).toBe(elements);
    expect(Buffer.from(big.buffer).equals(Buffer.from(initial.buffer))).toBe(true);
    // Each reply stays under half the client's 64 MiB limit.
    expect(await callsOf('GetParams')).toBeGreaterThanOrEqual(10);

    const unaryBefore = await callsOf('SendGrads');
    big.fill(-1); // the gradient: every weight goes up by 1
    await client.step((ctx) => ctx.sendGrads({ big }));
    expect(await callsOf('SendGradsStream')).toBe(1);
    expect(await callsOf('SendGrads')).toBe(unaryBefore);

    const after = (await client.getParams(['big'], Float32Array)).big;
    expect(after[0]).toBe(1);
    expect(after[4099]).toBe(4100);
    expect(after[elements - 1]).toBe(-2);
  }, 120_000);

  it('refuses at once to pull a block larger than its message limit', async () => {
    // A 1 MiB limit, the default block size of 1M elements (4 MiB).
    const small = await connect({ pservers: [pserver.address], maxMessageBytes: 1024 * 1024 });
    try {
      const started = performance.now();
      await expect(small.getParams(['big'])).rejects.toMatchObject({
        code: 'CLIENT_MESSAGE_TOO_LARGE',
      });
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      await small.close();
    }
  });
});
