import { invalidNameReason, shardOf, type RequestContext__Output } from '@pserver/proto';
import { TenureLostError, type ShardTenure } from '@pserver/coordination';
import type { CallContext } from '@pserver/rpc';
import { PserverError, staleEpoch } from '../shard/errors';
import type { Shard } from '../shard/shard';
import { beyondSafeInteger } from './request-checks';

/**
 * The one check every call of the service passes before it acts: the tenure (may this pserver
 * act on the shard now), the shard epoch the request was computed under, the placement of the
 * names it carries, and shutdown. Every check runs before the first change, so a refused call
 * changes nothing.
 */
export class ShardAccess {
  private stopping = false;

  constructor(
    private readonly shard: Shard,
    /**
     * Whether this pserver may act on the shard, and its epoch. Required synchronously before
     * every change and before every reply leaves.
     */
    private readonly tenure: ShardTenure,
  ) {}

  get epoch(): number {
    return this.tenure.epoch;
  }

  /** Whether the shard is in a cluster (an etcd tenure) rather than standalone. */
  get clustered(): boolean {
    return this.tenure.mode === 'cluster';
  }

  /** From now on, changes and new waits are refused with PSERVER_SHUTTING_DOWN. */
  beginShutdown(): void {
    this.stopping = true;
  }

  /** Throws unless the tenure holds: right before a change or a reply, with no await between. */
  require(): void {
    this.tenure.require();
  }

  /** Refuses a change, or a wait that would never be abandoned, once stopping or fenced. */
  refuseIfStopping(): void {
    this.tenure.require();
    if (this.stopping) throw shuttingDownError();
  }

  /**
   * Compares the shard epoch a request was computed under with the tenure's (DESIGN section 4).
   * Lower: the caller's view is stale (ABORTED with the current epoch, so it can refresh and redo
   * its step). Higher: a standalone pserver knows it is its own successor, so the epoch is bogus;
   * a cluster pserver may have been replaced and asks the tenure to confirm by a linearizable
   * read. Replaced: the tenure ends and the call is refused PSERVER_FENCED. Still the holder: the
   * epoch is bogus (INVALID_ARGUMENT), and a buggy client fences nothing.
   */
  async checkEpoch(context: RequestContext__Output | null): Promise<void> {
    const requested = context?.shardEpoch ?? 0;
    const { tenure } = this;
    const current = tenure.epoch;
    if (requested === current) return;
    if (requested < current) throw staleEpoch(requested, current);
    if (tenure.mode === 'standalone') {
      throw new PserverError(
        'PSERVER_BOGUS_EPOCH',
        `context.shardEpoch ${requested} is newer than the shard's epoch ${current}, which no pserver of this shard has had`,
      );
    }
    if (await tenure.confirm()) {
      throw new PserverError(
        'PSERVER_BOGUS_EPOCH',
        `context.shardEpoch ${requested} is newer than the shard's epoch ${current}, yet this pserver still holds the shard`,
      );
    }
    tenure.require();
    throw new PserverError('PSERVER_FENCED', 'this pserver was replaced; refresh the cluster view');
  }

  /** A valid tensor or block name placed on this shard. */
  checkName(name: string, field: string): string {
    // A tensor the shard holds passed this check when it was created: a push's and a pull's
    // names mostly are such, and hashing each name again costs a small push a tenth of its time.
    if (this.shard.tensors.has(name)) return name;
    const reason = invalidNameReason(name);
    if (reason)
      throw new PserverError(
        'PSERVER_INVALID_NAME',
        `${field}: ${JSON.stringify(name.slice(0, 100))} ${reason}`,
      );
    const { index, shardCount } = this.shard;
    const shard = shardOf(name, shardCount);
    if (shard !== index) {
      throw new PserverError(
        'PSERVER_WRONG_SHARD',
        `${field}: ${name} is placed on shard ${shard} of ${shardCount}, this is shard ${index}`,
      );
    }
    return name;
  }

  /** A push's trainer and step, checked, on an initialized shard that takes changes. */
  async pushContext(
    context: RequestContext__Output | null,
  ): Promise<{ trainerId: number; step: number }> {
    this.refuseIfStopping();
    await this.checkEpoch(context);
    const trainerId = context?.trainerId ?? 0;
    const step = context?.step ?? 0;
    if (trainerId === 0)
      throw new PserverError(
        'PSERVER_INVALID_CONTEXT',
        'context.trainerId: required (non-zero) for a push',
      );
    if (!Number.isSafeInteger(trainerId))
      throw beyondSafeInteger('context.trainerId', trainerId, 'PSERVER_INVALID_CONTEXT');
    if (!Number.isSafeInteger(step))
      throw beyondSafeInteger('context.step', step, 'PSERVER_INVALID_CONTEXT');
    if (step < 1)
      throw new PserverError(
        'PSERVER_INVALID_CONTEXT',
        `context.step: must be ≥ 1 for a push, got ${step}`,
      );
    if (!this.shard.initialized) {
      throw new PserverError(
        'PSERVER_NOT_INITIALIZED',
        'SendGrads: the shard is not initialized yet (FinishInitParams)',
      );
    }
    return { trainerId, step };
  }

  /** Waits until the shard is initialized, up to the call's deadline. */
  async whenInitialized(method: string, ctx: CallContext): Promise<void> {
    if (this.shard.initialized) return;
    // A wait begun after shutdown began would never be abandoned.
    this.refuseIfStopping();
    try {
      await this.shard.whenInitialized(ctx.signal);
    } catch (err) {
      if (err instanceof PserverError || err instanceof TenureLostError) throw err;
      throw Date.now() >= ctx.deadline
        ? new PserverError(
            'DEADLINE_EXCEEDED',
            `${method}: the shard was not initialized before the deadline`,
          )
        : new PserverError('CANCELLED', `${method}: cancelled while waiting for initialization`);
    }
  }
}

export function shuttingDownError(): PserverError {
  return new PserverError('PSERVER_SHUTTING_DOWN', 'the pserver is shutting down');
}
