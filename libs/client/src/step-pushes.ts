import type { SparseGrad, Tensor } from '@pserver/proto';
import type { StepIdentity } from './step-context';

/** One shard's push of a step, as sent (its bytes copied). */
export interface SentPush {
  dense: Tensor[];
  sparse: SparseGrad[];
  sampleCount: number | undefined;
}

/**
 * The pushes of a SYNC step, by shard, kept by the client until the next step went through on
 * every shard. A shard that failed over without the step's contributions (they were on the
 * killed primary alone, or after its last checkpoint) asks for them again (PSERVER_RESEND_STEP),
 * and the client sends these bytes rather than computing the step again: the step then closes
 * with exactly the contributions it would have had.
 */
export class StepPushes {
  private readonly byShard = new Map<number, SentPush>();

  constructor(readonly identity: StepIdentity) {}

  /**
   * Keeps what goes to `shard`: dense blocks copied (they view the trainer's arrays, which it may
   * reuse after the push), row gradients as they are (the client built them for this push).
   */
  record(shard: number, push: SentPush): void {
    this.byShard.set(shard, {
      ...push,
      dense: push.dense.map((tensor) => ({ ...tensor, content: Buffer.from(tensor.content!) })),
    });
  }

  /** What `trainerId`'s step `step` sent to `shard`; undefined when it took no part in it here. */
  sentTo(shard: number, trainerId: number, step: number): SentPush | undefined {
    if (this.identity.trainerId !== trainerId || this.identity.step !== step) return undefined;
    return this.byShard.get(shard);
  }
}
