import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { writePoints, type WritePoint } from '@pserver/checkpoint';
import type { Tensor } from '@pserver/proto';
import { type RpcError } from '@pserver/rpc';
import {
  appBundle,
  bytesOf,
  PserverDriver,
  spawnNode,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
  type PserverProcess,
} from '@pserver/testing';

afterAll(stopAllProcesses);

// A shard with every kind of tensor: optimized float32 and float64 with different rules, and
// stored integer and 16-bit tensors.
const tensors: { param: Tensor; optimizer?: object }[] = [
  {
    param: {
      name: 'w',
      elementType: 'ELEMENT_TYPE_FLOAT32',
      shape: [10, 100],
      content: bytesOf(seeded(1, 1000, Float32Array)),
    },
    optimizer: { adam: {}, learningRate: { base: 0.01 } },
  },
  {
    param: {
      name: 'v',
      elementType: 'ELEMENT_TYPE_FLOAT64',
      content: bytesOf(seeded(2, 300, Float64Array)),
    },
    optimizer: { rmsprop: { centered: true, momentum: 0.5 }, learningRate: { base: 0.01 } },
  },
  {
    param: {
      name: 'm',
      elementType: 'ELEMENT_TYPE_FLOAT32',
      content: bytesOf(seeded(3, 257, Float32Array)),
    },
    optimizer: {
      sgd: { momentum: 0.9, nesterov: true },
      learningRate: { base: 0.1, step: { stepSize: 2 } },
    },
  },
  {
    param: {
      name: 'ids',
      elementType: 'ELEMENT_TYPE_INT32',
      content: bytesOf(new Int32Array([1, -2, 3, 2 ** 31 - 1])),
    },
  },
  {
    param: {
      name: 'big',
      elementType: 'ELEMENT_TYPE_UINT64',
      content: bytesOf(new BigUint64Array([2n ** 64n - 1n, 5n])),
    },
  },
  {
    param: {
      name: 'h',
      elementType: 'ELEMENT_TYPE_FLOAT16',
      content: Buffer.from([0x00, 0x3c, 0x00, 0xc0]),
    },
  },
  {
    param: {
      name: 'u',
      elementType: 'ELEMENT_TYPE_UINT32',
      content: bytesOf(new Uint32Array([0, 2 ** 32 - 1])),
    },
  },
  {
    param: {
      name: 'n',
      elementType: 'ELEMENT_TYPE_INT64',
      content: bytesOf(new BigInt64Array([-(2n ** 63n), 7n])),
    },
  },
  {
    param: {
      name: 'bf',
      elementType: 'ELEMENT_TYPE_BFLOAT16',
      content: Buffer.from([0x80, 0x3f, 0x00, 0xc0, 0x49, 0x40]),
    },
  },
];
const names = tensors.map((t) => t.param.name!);

function seeded<T extends Float32Array | Float64Array>(
  seed: number,
  length: number,
  Type: new (n: number) => T,
): T {
  const values = new Type(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    values[i] = x / 2 ** 31 - 0.5;
  }
  return values;
}

function gradients(step: number, trainer: number): Tensor[] {
  return [
    {
      name: 'w',
      elementType: 'ELEMENT_TYPE_FLOAT32',
      content: bytesOf(seeded(step * 10 + trainer, 1000, Float32Array)),
    },
    {
      name: 'v',
      elementType: 'ELEMENT_TYPE_FLOAT64',
      content: bytesOf(seeded(step * 20 + trainer, 300, Float64Array)),
    },
    {
      name: 'm',
      elementType: 'ELEMENT_TYPE_FLOAT32',
      content: bytesOf(seeded(step * 30 + trainer, 257, Float32Array)),
    },
  ];
}

class Shard {
  constructor(
    readonly pserver: PserverProcess,
    readonly driver: PserverDriver,
    readonly epoch: number,
  ) {}

  static async start(
    args: string[],
    options: { checkpointDir?: string; env?: Record<string, string> } = {},
  ): Promise<Shard> {
    const pserver = await startPserverProcess(args, { ...options, name: 'pserver-ckpt' });
    const driver = new PserverDriver(pserver.address);
    return new Shard(pserver, driver, await driver.epoch());
  }

  async initialize(): Promise<void> {
    await this.initParams();
    await this.driver.finishInitParams({ trainerId: 1, shardEpoch: this.epoch });
  }

  async initParams(): Promise<void> {
    for (const { param, optimizer } of tensors)
      await this.driver.initParam({ trainerId: 1, shardEpoch: this.epoch }, param, optimizer);
  }

  /** Steps from..to of trainers 1 and 2. */
  async train(from: number, to: number): Promise<void> {
    for (let step = from; step <= to; step++) {
      for (const trainer of [1, 2]) {
        const reply = await this.driver.sendGrads(
          { trainerId: trainer, step, shardEpoch: this.epoch },
          gradients(step, trainer),
        );
        expect(reply.outcome).toBe('PUSH_OUTCOME_APPLIED');
      }
    }
  }

  /** Every byte of the shard, by tensor. */
  async bytes(): Promise<Record<string, string>> {
    const reply = await this.driver.getParams({ trainerId: 1, shardEpoch: this.epoch }, names);
    return Object.fromEntries(reply.params.map((p) => [p.name, p.content.toString('hex')]));
  }

  async save(): Promise<void> {
    await this.saveCall();
  }

  saveCall(): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.driver.client.saveCheckpoint({}, { deadline: Date.now() + 30_000 }, (err, reply) =>
        err ? reject(err) : resolve(reply),
      ),
    );
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    this.driver.close();
    await this.pserver.process.stop({ signal });
  }

  get dir(): string {
    return path.join(this.pserver.checkpointDir, 'shard-0');
  }

  files(suffix: string): string[] {
    return fs.readdirSync(this.dir).filter((f) => f.endsWith(suffix));
  }
}

function manifest(dir: string): { epoch: number; checkpoints: { path: string }[] } {
  return JSON.parse(fs.readFileSync(path.join(dir, 'shard-0', 'manifest.json'), 'utf8'));
}

/** The initial values, as `Shard.bytes` gives them. */
const initialBytes = Object.fromEntries(
  tensors.map(({ param }) => [param.name!, Buffer.from(param.content!).toString('hex')]),
);

describe('checkpoints and recovery', () => {
  it('restores the shard bit for bit, keeps deduplicating, and trains on exactly as if never stopped', async () => {
    const dir = tempDir('ckpt-roundtrip');
    const first = await Shard.start([], { checkpointDir: dir });
    await first.initialize();
    await first.train(1, 3);
    const before = await first.bytes();
    await first.stop(); // SIGTERM: the final checkpoint holds steps 1..3

    const second = await Shard.start([], { checkpointDir: dir });
    expect(second.epoch).toBe(first.epoch + 1);
    expect(await second.bytes()).toEqual(before);
    const status_ = await second.driver.status();
    expect(status_).toMatchObject({ initialized: true, updatesApplied: 18, trainers: 2 });
    expect(status_.lastCheckpoint?.path).toMatch(/^shard-0\/e1-s\d+-[\w-]+\.ckpt$/);
    // "Already initialized" after a recovery, as after FinishInitParams.
    await expect(
      second.driver.initParam(
        { trainerId: 3, shardEpoch: second.epoch },
        tensors[0]!.param,
        tensors[0]!.optimizer,
      ),
    ).rejects.toMatchObject({
      code: 'PSERVER_ALREADY_INITIALIZED',
    });
    // The step marks came back: step 3 of trainer 1 is a duplicate.
    expect(
      (
        await second.driver.sendGrads(
          { trainerId: 1, step: 3, shardEpoch: second.epoch },
          gradients(3, 1),
        )
      ).outcome,
    ).toBe('PUSH_OUTCOME_DUPLICATE');
    // A push computed under the old epoch is refused with the new one.
    const stale = await second.driver
      .sendGrads({ trainerId: 1, step: 4, shardEpoch: first.epoch }, gradients(4, 1))
      .catch((e: RpcError) => e);
    expect(stale).toMatchObject({
      status: status.ABORTED,
      code: 'PSERVER_STALE_EPOCH',
      facts: { shardEpoch: second.epoch },
    });
    await second.train(4, 6);

    // The same pushes on a shard that never stopped.
    const control = await Shard.start([]);
    await control.initialize();
    await control.train(1, 6);
    expect(await second.bytes()).toEqual(await control.bytes());
    await second.stop();
    await control.stop();
  });

  it('checkpoints periodically, also after a recovery', async () => {
    const dir = tempDir('ckpt-periodic');
    const first = await Shard.start(['--checkpoint-interval-s', '1'], { checkpointDir: dir });
    await first.initialize();
    await first.train(1, 1);
    await first.pserver.process.waitForLog(
      (e) => e.msg === 'checkpoint committed' && e.reason === 'periodic',
      { timeoutMs: 15_000 },
    );
    await first.stop('SIGKILL');
    const second = await Shard.start(['--checkpoint-interval-s', '1'], { checkpointDir: dir });
    await second.train(2, 2);
    await second.pserver.process.waitForLog(
      (e) => e.msg === 'checkpoint committed' && e.reason === 'periodic',
      { timeoutMs: 15_000 },
    );
    expect(manifest(dir).checkpoints[0]!.path).toMatch(new RegExp(`^shard-0/e${second.epoch}-`));
    await second.stop();
  });

  describe('initialization', () => {
    it('is durable when FinishInitParams answers: killed right after, the pserver restarts initialized with the initial values bit for bit', async () => {
      const dir = tempDir('ckpt-init');
      const first = await Shard.start([], { checkpointDir: dir });
      await first.initialize();
      await first.stop('SIGKILL');

      const restarted = await Shard.start([], { checkpointDir: dir });
      expect(await restarted.driver.status()).toMatchObject({
        initialized: true,
        updatesApplied: 0,
        lastCheckpoint: { path: expect.stringMatching(/^shard-0\/e1-s1-/) },
      });
      expect(await restarted.bytes()).toEqual(initialBytes);
      // The optimizer configs and (empty) state came back too: it trains as a shard never stopped.
      await restarted.train(1, 2);
      const control = await Shard.start([]);
      await control.initialize();
      await control.train(1, 2);
      expect(await restarted.bytes()).toEqual(await control.bytes());
      await restarted.stop('SIGKILL');
      await control.stop('SIGKILL');
    });

    // The boundary: killed before the commit, the shard comes back uninitialized (the trainer's
    // retry initializes it again), never initialized and empty; killed after it, initialized.
    it.each([['before-commit'], ['after-commit-before-delete']] as const)(
      'killed at %s of the FinishInitParams checkpoint: restarts uninitialized, or initialized with the initial values',
      async (point: WritePoint) => {
        const dir = tempDir('ckpt-init-crash');
        const victim = await Shard.start([], {
          checkpointDir: dir,
          env: { PSERVER_FAILPOINT: point },
        });
        await victim.initParams();
        await expect(
          victim.driver.finishInitParams({ trainerId: 1, shardEpoch: victim.epoch }),
        ).rejects.toBeDefined();
        expect(await victim.pserver.process.exited).toEqual({ code: null, signal: 'SIGKILL' });
        victim.driver.close();

        const restarted = await Shard.start([], { checkpointDir: dir });
        const committed = point === 'after-commit-before-delete';
        expect(await restarted.driver.status()).toMatchObject({
          initialized: committed,
          tensors: committed ? expect.arrayContaining([expect.anything()]) : [],
        });
        expect(restarted.files('.tmp')).toEqual([]);
        expect(restarted.files('.ckpt')).toHaveLength(committed ? 1 : 0);
        if (!committed) await restarted.initialize();
        expect(await restarted.bytes()).toEqual(initialBytes);
        await restarted.stop('SIGKILL');
      },
    );

    it('a failed FinishInitParams checkpoint fails the call with its status and leaves the shard uninitialized; the retry commits', async () => {
      const dir = tempDir('ckpt-init-enospc');
      const shard = await Shard.start([], {
        checkpointDir: dir,
        env: { PSERVER_FAILPOINT: 'mid-write:enospc' },
      });
      await shard.initParams();
      const context = { trainerId: 1, shardEpoch: shard.epoch };
      const failed = (await shard.driver.finishInitParams(context).catch((e: unknown) => e)) as {
        status: number;
        code: string;
      };
      expect(failed).toMatchObject({
        status: status.RESOURCE_EXHAUSTED,
        code: 'CHECKPOINT_NO_SPACE',
      });
      expect(await shard.driver.status()).toMatchObject({
        initialized: false,
        lastCheckpoint: null,
      });
      expect(manifest(dir).checkpoints).toEqual([]);
      expect(shard.files('.tmp')).toEqual([]);
      // The trainer's retry: the failpoint fails only once.
      await shard.driver.finishInitParams(context);
      expect(manifest(dir).checkpoints).toHaveLength(1);
      await expect(shard.driver.finishInitParams(context)).rejects.toMatchObject({
        code: 'PSERVER_ALREADY_INITIALIZED',
      });
      await shard.stop('SIGKILL');
      const restarted = await Shard.start([], { checkpointDir: dir });
      expect(await restarted.bytes()).toEqual(initialBytes);
      await restarted.stop('SIGKILL');
    });
  });

  // The victims below recover a checkpoint, so their failpoint is reached by the SaveCheckpoint
  // they are asked for, not by a FinishInitParams (the tests above kill one there).
  describe.each(writePoints.map((point) => [point]))('killed at %s', (point: WritePoint) => {
    it('restarts with the last committed checkpoint, no temporary file and at most retain + 1 files', async () => {
      const dir = tempDir('ckpt-crash');
      const setup = await Shard.start(['--checkpoint-retain', '2'], { checkpointDir: dir });
      await setup.initialize();
      await setup.train(1, 2);
      await setup.save();
      await setup.train(3, 3);
      await setup.save();
      const committed = await setup.bytes();
      await setup.stop('SIGKILL');

      const victim = await Shard.start(['--checkpoint-retain', '2'], {
        checkpointDir: dir,
        env: { PSERVER_FAILPOINT: point },
      });
      await victim.train(4, 5);
      const newer = await victim.bytes();
      await expect(victim.saveCall()).rejects.toBeDefined();
      expect(await victim.pserver.process.exited).toEqual({ code: null, signal: 'SIGKILL' });

      const restarted = await Shard.start(['--checkpoint-retain', '2'], { checkpointDir: dir });
      // Committed at the point of the kill only once the meta was written.
      expect(await restarted.bytes()).toEqual(
        point === 'after-commit-before-delete' ? newer : committed,
      );
      expect(restarted.files('.tmp')).toEqual([]);
      expect(restarted.files('.ckpt').length).toBeLessThanOrEqual(3);
      for (const { path: file } of manifest(dir).checkpoints)
        expect(fs.existsSync(path.join(dir, file))).toBe(true);
      await restarted.stop('SIGKILL');
    });
  });

  describe('corrupt or missing files', () => {
    let dir: string;
    let older: Record<string, string>;
    let newest: string;

    beforeEach(async () => {
      dir = tempDir('ckpt-corrupt');
      const shard = await Shard.start([], { checkpointDir: dir });
      await shard.initialize();
      await shard.train(1, 2);
      await shard.save();
      older = await shard.bytes();
      await shard.train(3, 4);
      await shard.save();
      await shard.stop('SIGKILL');
      newest = path.join(dir, manifest(dir).checkpoints[0]!.path);
    });

    async function expectFallback(): Promise<void> {
      const shard = await Shard.start([], { checkpointDir: dir });
      expect(await shard.bytes()).toEqual(older);
      expect(
        shard.pserver.process
          .jsonLines()
          .some((e) => e.msg === 'checkpoint unusable, trying the previous one'),
      ).toBe(true);
      await shard.stop('SIGKILL');
    }

    it('falls back past a file with one flipped byte, and renames it .broken', async () => {
      const bytes = fs.readFileSync(newest);
      bytes[Math.floor(bytes.length / 2)]! ^= 0x40;
      fs.writeFileSync(newest, bytes);
      await expectFallback();
      // Renamed, so still owner-only.
      expect(fs.statSync(`${newest}.broken`).mode & 0o777).toBe(0o600);
    });

    it('falls back past a truncated file', async () => {
      fs.truncateSync(newest, fs.statSync(newest).size - 100);
      await expectFallback();
    });

    it('falls back past a deleted file the manifest still names', async () => {
      fs.rmSync(newest);
      await expectFallback();
    });

    it('refuses to start when every committed checkpoint is unusable, and starts empty with --allow-fresh-start', async () => {
      for (const { path: file } of manifest(dir).checkpoints)
        fs.writeFileSync(path.join(dir, file), 'garbage');
      const refused = spawnNode(
        appBundle('pserver'),
        ['--port', '0', '--log-format', 'json', '--checkpoint-dir', dir],
        {
          name: 'pserver-refuses',
        },
      );
      expect((await refused.exited).code).toBe(3);
      expect(refused.lines.join('\n')).toContain('refusing to serve an empty shard');
      const fresh = await Shard.start(['--allow-fresh-start'], { checkpointDir: dir });
      expect(await fresh.driver.status()).toMatchObject({ initialized: false, tensors: [] });
      await fresh.stop('SIGKILL');
    });
  });

  describe('a full disk', () => {
    const asRoot = process.getuid?.() === 0;

    it(`fails that checkpoint cleanly, keeps serving, and saves again once space is freed (${asRoot ? 'small tmpfs' : 'injected ENOSPC'})`, async () => {
      const dir = tempDir('ckpt-full');
      if (asRoot) execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512k,mode=0700', 'tmpfs', dir]);
      try {
        const setup = await Shard.start([], { checkpointDir: dir });
        await setup.initialize();
        await setup.train(1, 1);
        await setup.save();
        await setup.stop('SIGKILL');
        const committed = manifest(dir).checkpoints[0]!.path;

        const shard = await Shard.start([], {
          checkpointDir: dir,
          env: asRoot ? {} : { PSERVER_FAILPOINT: 'mid-write:enospc' },
        });
        const filler = path.join(dir, 'filler');
        if (asRoot) {
          const { bavail, bsize } = fs.statfsSync(dir);
          fs.writeFileSync(filler, Buffer.alloc(bavail * bsize - 8192));
        }
        await shard.train(2, 2);
        const full = await shard.saveCall().catch((e: unknown) => e);
        expect(full).toMatchObject({ code: status.RESOURCE_EXHAUSTED });
        expect(
          (full as { metadata: { get(k: string): unknown[] } }).metadata.get('pserver-error-code'),
        ).toEqual(['CHECKPOINT_NO_SPACE']);
        // The previous checkpoint stays committed, and nothing half-written is left.
        expect(manifest(dir).checkpoints[0]!.path).toBe(committed);
        expect(fs.existsSync(path.join(dir, committed))).toBe(true);
        expect(shard.files('.tmp')).toEqual([]);
        // Still serving.
        await shard.train(3, 3);
        fs.rmSync(filler, { force: true });
        await shard.save();
        expect(manifest(dir).checkpoints[0]!.path).not.toBe(committed);
        await shard.stop('SIGKILL');
      } finally {
        if (asRoot) execFileSync('umount', [dir]);
      }
    });
  });
});
