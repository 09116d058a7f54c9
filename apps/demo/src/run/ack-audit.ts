import type { PserverClient } from '@pserver/client';
import { sleep } from '@pserver/local-cluster';

/**
 * One row per audited step, raised from 0 by exactly 1 (SGD, learning rate 1, gradient −1): at
 * the end a row at 0 is an acknowledged update lost, one above 1 an update applied twice. The
 * model that initializes the job declares it (`DemoModel.initialize`).
 */
export const ackTable = {
  name: 'acks',
  dim: 1,
  buckets: 64,
  initializer: { constant: { value: 0 } },
  optimizer: { sgd: {}, learningRate: { base: 1 } },
};

/** What the audit found: of the steps acknowledged, how many the job lost or applied twice. */
export interface AuditResult {
  acknowledged: number;
  lost: number;
  doubled: number;
}

const minusOne = Float32Array.of(-1);
/** Rows read per lookup at the end. */
const readBatch = 4096;

/**
 * The demo's count of acknowledged updates lost: a client of the demo's own steps alongside the
 * trainers, through the same failures, each step pushing one row of `ackTable`; the steps it
 * was told were applied must each read exactly 1 at the end. It counts what a trainer's push
 * goes through — the shard's failover, restore or promotion — not a model's quality.
 */
export class AckAudit {
  private readonly acked: bigint[] = [];
  private stopped = false;
  /** The stepping loop; it never rejects (a failed step is kept in `failure`). */
  private readonly loop: Promise<void>;
  private failure: unknown;

  constructor(
    private readonly client: PserverClient,
    paceMs: number,
  ) {
    this.loop = this.run(paceMs).catch((err: unknown) => {
      // A step that failed after the demo stopped (its client closed) is no finding.
      if (!this.stopped) this.failure = err;
    });
  }

  /** Stops stepping (before the client closes); a step in flight may still finish. */
  stop(): void {
    this.stopped = true;
  }

  private async run(paceMs: number): Promise<void> {
    for (let row = 1n; !this.stopped; row++) {
      await this.client.step((ctx) => ctx.pushRows(ackTable.name, BigInt64Array.of(row), minusOne));
      this.acked.push(row);
      await sleep(paceMs);
    }
  }

  /**
   * Reads back every row acknowledged so far while the audit goes on stepping: after a change of
   * the job (its shard count grown), what that change lost or applied twice.
   */
  check(): Promise<AuditResult> {
    if (this.failure) return Promise.reject(this.failure);
    return this.readBack(this.acked.slice());
  }

  /** Stops stepping and reads every acknowledged row back. */
  async finish(): Promise<AuditResult> {
    this.stopped = true;
    await this.loop;
    if (this.failure) throw this.failure;
    return this.readBack(this.acked);
  }

  /** Looks each row up (through the client's current view of the shards) and counts. */
  private async readBack(rows: readonly bigint[]): Promise<AuditResult> {
    const result: AuditResult = { acknowledged: rows.length, lost: 0, doubled: 0 };
    for (let i = 0; i < rows.length; i += readBatch) {
      const ids = BigInt64Array.from(rows.slice(i, i + readBatch));
      for (const value of await this.client.lookup(ackTable.name, ids)) {
        if (value === 0) result.lost++;
        else if (value !== 1) result.doubled++;
      }
    }
    return result;
  }
}
