import type { FramePlace, CheckpointMeta as StoredMeta } from '@pserver/checkpoint';
import { consistencyMessage } from '@pserver/coordination';
import type {
  CheckpointMeta,
  GetShardStatusRequest__Output,
  GetShardStatusResponse,
  SaveCheckpointResponse,
} from '@pserver/proto';
import type { ShardConsistency } from '../consistency/shard-consistency';
import type { AdmissionControl } from '../shard/admission';
import { PserverError } from '../shard/errors';
import type { Shard } from '../shard/shard';
import type { CheckpointSaver } from './init-service';
import type { ShardReplication } from './push-service';
import type { ShardAccess } from './shard-access';

/** GetShardStatus and SaveCheckpoint: what the shard holds and how it is kept. */
export class StatusService {
  /** For uptime: `performance.now()` when the shard began to be served. */
  private readonly startedAtMs: number;

  constructor(
    private readonly shard: Shard,
    private readonly access: ShardAccess,
    private readonly consistency: ShardConsistency,
    private readonly admission: AdmissionControl,
    private readonly checkpointer: CheckpointSaver,
    private readonly replication: ShardReplication | undefined,
    startedAtMs = performance.now(),
  ) {
    this.startedAtMs = startedAtMs;
  }

  /** Writes and commits a checkpoint now; answers its meta. */
  async saveCheckpoint(): Promise<SaveCheckpointResponse> {
    if (!this.shard.initialized) {
      throw new PserverError(
        'PSERVER_NOT_INITIALIZED',
        'SaveCheckpoint: the shard is not initialized yet (FinishInitParams)',
      );
    }
    return { meta: toProtoMeta(await this.checkpointer.save('request')) };
  }

  getShardStatus(request?: GetShardStatusRequest__Output): GetShardStatusResponse {
    const { shard, consistency } = this;
    const trainerId = request?.context?.trainerId ?? 0;
    const tensors = [...shard.tensors.values()].map((t) => ({
      name: t.name,
      elementType: t.elementType,
      shape: [...t.shape],
      elements: t.elements,
      bytes: t.byteLength,
      updates: t.updates,
      optimizer: t.algorithm,
    }));
    const lastCommitted = this.checkpointer.lastCommitted;
    return {
      index: shard.index,
      shardCount: shard.shardCount,
      shardEpoch: this.access.epoch,
      mode: this.access.clustered ? 'SHARD_MODE_CLUSTER' : 'SHARD_MODE_STANDALONE',
      initialized: shard.initialized,
      tensors,
      totalBytes: shard.totalBytes,
      updatesApplied: shard.updatesApplied,
      uptimeMs: Math.round(performance.now() - this.startedAtMs),
      trainers: shard.marks.size,
      pushBytesInFlight: this.admission.inFlight,
      tables: [...shard.tables.values()].map(({ table }) => ({
        name: table.name,
        dim: table.dim,
        rows: table.rows,
        bytesPerRow: table.bytesPerRow,
        step: table.step,
        ...table.totals,
        optimizer: rowAlgorithmName(table.optimizer.config.rule.kind),
      })),
      lastCheckpoint: lastCommitted ? toProtoMeta(lastCommitted) : null,
      consistency: consistencyMessage(consistency.config),
      version: consistency.version,
      minClock: consistency.clock,
      roster: [...consistency.roster],
      trainerLastStep: trainerId === 0 ? 0 : consistency.lastStep(trainerId),
      ...(this.replication && {
        appliedSeq: shard.appliedSeq,
        replicas: this.replication.replicas().map(({ member, acked, inSync }) => ({
          member,
          ackedSeq: acked,
          inSync,
        })),
        moves: this.replication.receivers().map(({ to, acked, ...progress }) => ({
          ...progress,
          index: to.index,
          shardCount: to.shardCount,
          ackedSeq: acked,
        })),
      }),
    };
  }
}

/** A row rule's name in GetShardStatus. */
function rowAlgorithmName(kind: string): string {
  return kind === 'rowwiseAdagrad' ? 'rowwise_adagrad' : kind;
}

function toProtoMeta(meta: StoredMeta): CheckpointMeta {
  const bytes = (hex: string): Buffer => Buffer.from(hex, 'hex');
  const place = (at: FramePlace | undefined) => at && { ...at, checksum: bytes(at.checksum) };
  return {
    ...meta,
    checksum: bytes(meta.checksum),
    indexPlace: place(meta.indexPlace),
    chain: meta.chain.map((file) => ({
      ...file,
      checksum: bytes(file.checksum),
      indexPlace: place(file.indexPlace),
    })),
  };
}
