import type {
  GradientChunk__Output,
  SendGradsChunk__Output,
  SendGradsRequest__Output,
  SendGradsResponse,
  SparseGrad__Output,
} from '@pserver/proto';
import type { CallContext } from '@pserver/rpc';
import {
  settledOutcome,
  type PushOutcome,
  type ShardConsistency,
} from '../consistency/shard-consistency';
import type { AdmissionControl } from '../shard/admission';
import { PserverError } from '../shard/errors';
import { evictionsOf, recordOf, stagePieces, type PushRecord } from '../shard/push-record';
import type { Shard } from '../shard/shard';
import type { MoveProgress } from '../shard/share-parts';
import { StagedPush } from '../shard/staged-push';
import type { PushStaging } from './push-staging';
import { checkSampleCount, sparseBytes } from './request-checks';
import type { ShardAccess } from './shard-access';

/**
 * The shard's replicas (a primary with replicas): `replicate` forwards a push just applied, as
 * the `seq`-th, and resolves once every replica in sync applied it; `replicated` resolves once
 * they applied everything applied so far. A push is acknowledged only after that.
 */
export interface ShardReplication {
  replicate(seq: number, record: PushRecord): Promise<void>;
  replicated(): Promise<void>;
  /** Each replica's progress, for GetShardStatus. */
  replicas(): { member: string; acked: number; inSync: boolean }[];
  /** Each receiver's of a live move (its copy sent, loaded, its last push applied), for GetShardStatus. */
  receivers(): MoveProgress[];
}

/** A push's trainer and step, once its context passed the checks. */
interface Pushing {
  trainerId: number;
  step: number;
}

/**
 * SendGrads and SendGradsStream. A push is checked (access, context, the mode's wait), classified
 * by the consistency mode (a duplicate or a late push is answered before its gradients are read),
 * staged piece by piece, then taken in by the mode — applied, or joined to the open SYNC step —
 * and acknowledged once the shard's replicas hold what it changed. Nothing of a refused push
 * stays: every check runs before the first change.
 */
export class PushService {
  /** The staged pushes this service handed out (`newPush`), by the face the data path sees. */
  private readonly handedOut = new WeakMap<PushStaging, StagedPush>();

  constructor(
    private readonly shard: Shard,
    private readonly access: ShardAccess,
    private readonly consistency: ShardConsistency,
    private readonly admission: AdmissionControl,
    private readonly replication: ShardReplication | undefined,
    /** Called for each push acknowledged as a duplicate (metrics). */
    private readonly onDuplicatePush: (() => void) | undefined,
  ) {}

  /**
   * An empty push of this shard, under its admission cap, for the data path to place a push's
   * bytes in as they arrive; it is passed back with the push (`sendGrads`), and freed when that
   * call ends.
   */
  newPush(): PushStaging {
    const push = this.stagedPush();
    this.handedOut.set(push, push);
    return push;
  }

  /**
   * Applies one push. `staging` is where the data path placed its bytes as they arrived
   * (`newPush`): this call's from then on, discarded when the call ends. One handed out by
   * another service (the shard's tenure changed meanwhile) is read from, not used.
   */
  async sendGrads(
    request: SendGradsRequest__Output,
    ctx: CallContext,
    staging?: PushStaging,
  ): Promise<SendGradsResponse> {
    const push = this.takeStaging(staging);
    try {
      const pushing = await this.access.pushContext(request.context);
      await this.consistency.beforePush(pushing.trainerId, pushing.step, ctx);
      const weight = checkSampleCount(
        request.sampleCount,
        request.grads.length + request.sparse.length,
      );
      const settled = this.settled(pushing);
      if (settled) return await this.acknowledged(settled);
      push.admit(
        request.grads.reduce((total, g) => total + g.content.byteLength, 0) +
          sparseBytes(request.sparse),
      );
      stagePieces(push, request, true, (name, field) => this.access.checkName(name, field));
      return await this.take(pushing, weight, push, () =>
        recordOf(pushing.trainerId, pushing.step, request, true),
      );
    } finally {
      push.discard();
      if (staging !== push) staging?.discard();
    }
  }

  /** A streamed push; `staging` as for `sendGrads`. */
  async sendGradsStream(
    chunks: AsyncIterable<SendGradsChunk__Output>,
    ctx: CallContext,
    staging?: PushStaging,
  ): Promise<SendGradsResponse> {
    const push = this.takeStaging(staging);
    let pushing: Pushing | undefined;
    let settled: SendGradsResponse | undefined;
    let sampleCount: number | undefined;
    let admitted = 0;
    const received = {
      grads: [] as GradientChunk__Output[],
      sparse: [] as SparseGrad__Output[],
    };
    try {
      for await (const chunk of chunks) {
        if (!pushing) {
          pushing = await this.access.pushContext(chunk.context);
          await this.consistency.beforePush(pushing.trainerId, pushing.step, ctx);
          sampleCount = chunk.sampleCount;
          settled = this.settled(pushing);
        }
        // A duplicate's (or late push's) pieces are read and dropped: it will not be applied.
        if (settled) continue;
        this.access.refuseIfStopping();
        admitted +=
          chunk.grads.reduce((total, g) => total + g.content.byteLength, 0) +
          sparseBytes(chunk.sparse);
        push.admit(admitted);
        received.sparse.push(...chunk.sparse);
        received.grads.push(...chunk.grads);
        stagePieces(push, chunk, false, (name, field) => this.access.checkName(name, field));
      }
      ctx.signal.throwIfAborted();
      if (!pushing)
        throw new PserverError(
          'PSERVER_INVALID_STREAM',
          'SendGradsStream: the stream ended without a message',
        );
      if (settled) return await this.acknowledged(settled);
      const weight = checkSampleCount(sampleCount, push.empty ? 0 : 1);
      const { trainerId, step } = pushing;
      return await this.take(pushing, weight, push, () =>
        recordOf(trainerId, step, received, false),
      );
    } finally {
      push.discard();
      if (staging !== push) staging?.discard();
    }
  }

  /** The staged push `staging` is, when this service handed it out; else a new one. */
  private takeStaging(staging: PushStaging | undefined): StagedPush {
    return (staging && this.handedOut.get(staging)) ?? this.stagedPush();
  }

  private stagedPush(): StagedPush {
    return new StagedPush(
      (name) => this.shard.tensors.get(name),
      (name) => this.shard.tables.get(name),
      this.admission,
    );
  }

  /** The answer to a push settled before its gradients are read (a duplicate, or late). */
  private settled({ trainerId, step }: Pushing): SendGradsResponse | undefined {
    const fate = this.consistency.classify(trainerId, step);
    if (fate.kind === 'apply' || fate.kind === 'join') return undefined;
    return this.reply(settledOutcome(fate));
  }

  /**
   * The consistency mode takes the staged push in (the tenure required, and no stop begun, right
   * before, no await between); an applied push is forwarded to the replicas as `record` says it.
   */
  private async take(
    { trainerId, step }: Pushing,
    weight: number,
    push: StagedPush,
    record: () => PushRecord,
  ): Promise<SendGradsResponse> {
    // Copied before the apply, as received (an update rule may clip a gradient in place), and
    // only for a push the mode applies now (a push joining the open step is forwarded with it).
    const applies = this.consistency.classify(trainerId, step).kind === 'apply';
    const forwarded = this.replication && applies ? record() : undefined;
    // Not after a stop or a hand-back began: the final checkpoint must hold every push applied.
    this.access.refuseIfStopping();
    const outcome = this.consistency.accept(trainerId, step, weight, push);
    if (forwarded && outcome.applied) forwarded.evictions = evictionsOf(outcome.applied);
    return this.acknowledged(this.reply(outcome), outcome.applied && forwarded);
  }

  private reply(outcome: PushOutcome): SendGradsResponse {
    if (outcome.outcome === 'PUSH_OUTCOME_DUPLICATE') this.onDuplicatePush?.();
    return {
      shardEpoch: this.access.epoch,
      outcome: outcome.outcome,
      skippedNonFinite: outcome.skippedNonFinite,
      lastAppliedStep: outcome.lastStep,
      sparse: outcome.sparse,
      version: this.consistency.version,
    };
  }

  /**
   * The reply once the shard's replicas hold what it acknowledges: an applied push once each
   * replica in sync applied it, a duplicate or late push once they applied everything applied so
   * far (the first try may still be on its way to them); a push joined to the open SYNC step at
   * once (the step is forwarded when it closes). Without replicas, at once.
   */
  private async acknowledged(
    reply: SendGradsResponse,
    forwarded?: PushRecord,
  ): Promise<SendGradsResponse> {
    const replication = this.replication;
    if (!replication || reply.outcome === 'PUSH_OUTCOME_ACCUMULATED') return reply;
    if (forwarded) {
      forwarded.marks = this.consistency.takeMovedMarks();
      await replication.replicate(this.shard.appliedSeq, forwarded);
    } else await replication.replicated();
    // The tenure may have ended while the replicas answered: a deposed primary's ack is not one.
    this.access.require();
    return reply;
  }
}
