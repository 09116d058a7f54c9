import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SnapshotBuffers } from '@pserver/checkpoint';
import { StandaloneTenure } from '@pserver/coordination';
import { silentLogger } from '@pserver/logging';
import type { CallContext } from '@pserver/rpc';
import { shardDigest } from '../replication/shard-digest';
import { AdmissionControl } from '../shard/admission';
import { Checkpointer } from './checkpointer';
import { findOrphanedStates, removeOrphanedStates, writeOrphanedState } from './orphaned-state';
import { ParameterService } from '../service/parameter-service';
import { Shard } from '../shard/shard';
import { snapshotShard } from './shard-snapshot';

const call: CallContext = {
  signal: new AbortController().signal,
  deadline: Infinity,
  peer: 'test',
  logger: silentLogger,
};
const length = 256;

/** A shard with one Adam tensor, its checkpointer, and a way to push to it. */
async function served(root: string) {
  const tenure = await StandaloneTenure.open(root, 0, 1);
  const shard = new Shard(0, 1, undefined);
  const checkpointer = new Checkpointer({
    root,
    shard,
    tenure,
    retain: 2,
    deltasPerFull: 0,
    logger: silentLogger,
  });
  await checkpointer.recover();
  const service = new ParameterService({
    shard,
    tenure,
    admission: new AdmissionControl(1 << 30),
    checkpointer,
  });
  const context = (step: number) => ({ trainerId: 1, pass: 0, step, shardEpoch: tenure.epoch });
  if (!shard.initialized) {
    await service.initParam(
      {
        context: context(0),
        param: {
          name: 'w',
          elementType: 'ELEMENT_TYPE_FLOAT32',
          shape: [length],
          content: Buffer.alloc(length * 4),
        },
        optimizer: { adam: {}, learningRate: { base: 0.01 } } as never,
      },
      call,
    );
    shard.markInitialized();
  }
  const push = async (step: number) => {
    const grad = Float32Array.from({ length }, (_, i) => Math.sin(step * 31 + i));
    await service.sendGrads(
      {
        context: context(step),
        grads: [
          {
            name: 'w',
            elementType: 'ELEMENT_TYPE_FLOAT32',
            shape: [length],
            content: Buffer.from(grad.buffer),
          },
        ],
        sparse: [],
      },
      call,
    );
  };
  return { shard, checkpointer, push, epoch: tenure.epoch };
}

/** What the shard holds (the digest replicas compare), whatever sequence it counts from. */
function contentOf(shard: Shard): string {
  const seq = shard.appliedSeq;
  shard.appliedSeq = 0;
  try {
    return shardDigest(shard);
  } finally {
    shard.appliedSeq = seq;
  }
}

async function orphan(root: string, shard: Shard, epoch: number, member = 'a'): Promise<string> {
  const buffers = new SnapshotBuffers();
  try {
    const snapshot = snapshotShard(
      shard,
      { shardEpoch: epoch, seq: 0, uuid: `u-${member}` },
      buffers,
    );
    return await writeOrphanedState(root, snapshot, {
      epoch,
      member,
      appliedSeq: shard.appliedSeq,
    });
  } finally {
    buffers.release();
  }
}

describe('orphaned states', () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'orphaned-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('is adopted, byte for byte, instead of an older checkpoint', async () => {
    const first = await served(root);
    for (let step = 1; step <= 5; step++) await first.push(step);
    await first.checkpointer.save('test');
    for (let step = 6; step <= 9; step++) await first.push(step);
    await orphan(root, first.shard, first.epoch);

    const next = await served(root);
    const outcome = await next.checkpointer.recover(first.epoch);
    expect(outcome.kind).toBe('adopted');
    expect(contentOf(next.shard)).toEqual(contentOf(first.shard));
    expect(next.shard.marks.entries().map((m) => [m.trainerId, m.step])).toEqual([[1, 9]]);
    // Nothing commits an orphan: the shard must be saved before it serves.
    expect(next.checkpointer.dirty).toBe(true);
  });

  it('is not adopted under another epoch, when older than the newest checkpoint, or when corrupt', async () => {
    const first = await served(root);
    for (let step = 1; step <= 3; step++) await first.push(step);
    await orphan(root, first.shard, first.epoch, 'stale');
    await first.push(4);
    await first.checkpointer.save('test');
    // Not from before the last owner that announced serving, nor from this owner's epoch on.
    expect(await findOrphanedStates(root, 0, { from: first.epoch + 1, below: 99 })).toEqual([]);
    expect(await findOrphanedStates(root, 0, { from: 1, below: first.epoch })).toEqual([]);

    // Older than the checkpoint (a replica's copy from before its primary's last checkpoint).
    const older = await served(root);
    expect((await older.checkpointer.recover(first.epoch)).kind).toBe('restored');
    expect(contentOf(older.shard)).toEqual(contentOf(first.shard));

    // Newer but corrupt: the checkpoint is restored instead.
    await first.push(5);
    const file = await orphan(root, first.shard, first.epoch, 'corrupt');
    const bytes = fs.readFileSync(path.join(root, file));
    bytes[bytes.length - 9]! ^= 0xff;
    fs.writeFileSync(path.join(root, file), bytes);
    const fallback = await served(root);
    expect((await fallback.checkpointer.recover(first.epoch)).kind).toBe('restored');
    expect(fallback.shard.updatesApplied).toBe(4);
  });

  it('is invisible until its description is written, the most advanced first, and removed below an epoch', async () => {
    const first = await served(root);
    await first.push(1);
    await orphan(root, first.shard, 5, 'behind');
    await first.push(2);
    await orphan(root, first.shard, 5, 'ahead');
    await first.push(3);
    await orphan(root, first.shard, 9, 'later');
    // A file whose description never came (the writer died between the two renames).
    const dir = path.join(root, 'shard-0', 'orphans');
    fs.copyFileSync(path.join(dir, 'e5-ahead.ckpt'), path.join(dir, 'e5-half.ckpt'));
    expect((await findOrphanedStates(root, 0, { from: 5, below: 9 })).map((o) => o.member)).toEqual(
      ['ahead', 'behind'],
    );
    // An owner after the last that served never announced: its state counts too.
    expect(
      (await findOrphanedStates(root, 0, { from: 5, below: 10 })).map((o) => o.member),
    ).toEqual(['later', 'ahead', 'behind']);
    expect(await removeOrphanedStates(root, 0, 9)).toHaveLength(5);
    expect(fs.readdirSync(dir).sort()).toEqual(['e9-later.ckpt', 'e9-later.json']);
  });
});
