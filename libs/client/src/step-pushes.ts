import { bucketsOfIds, shardOf, type SparseGrad, type Tensor } from '@pserver/proto';
import type { StepIdentity } from './step-context';
import type { TableDirectory } from './tables';

/** One shard's push of a step, as sent (its bytes copied). */
export interface SentPush {
  dense: Tensor[];
  sparse: SparseGrad[];
  sampleCount: number | undefined;
}

/** Where pushes go now: the shard count, and the tables' bucket placement. */
export interface Placement {
  shardCount: number;
  tables: TableDirectory;
}

/**
 * The pushes of a SYNC step, by shard, kept by the client until the next step went through on
 * every shard. A shard that failed over without the step's contributions (they were on the
 * killed primary alone, or after its last checkpoint, or on a primary that handed its shard back
 * before the step closed) asks for them again (PSERVER_RESEND_STEP), and the client sends these
 * bytes rather than computing the step again: the step then closes with exactly the
 * contributions it would have had.
 */
export class StepPushes {
  private readonly byShard = new Map<number, SentPush>();

  /** `shardCount`: the count the step's pushes were placed under. */
  constructor(
    readonly identity: StepIdentity,
    readonly shardCount: number,
  ) {}

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

  /**
   * What `trainerId`'s step `step` sent to what is `shard` under `now`; undefined when it took no
   * part in it. Under the count the step ran at, the push as sent. After a change of the count,
   * every block and row the step sent that `shard` holds now, with the step's sample count (0
   * when nothing of it lands there): the shard's slices came from several old shards, and those
   * that counted the step already leave it out (the pserver's marks ahead).
   */
  sentTo(shard: number, trainerId: number, step: number, now: Placement): SentPush | undefined {
    if (this.identity.trainerId !== trainerId || this.identity.step !== step) return undefined;
    if (now.shardCount === this.shardCount) return this.byShard.get(shard);
    if (this.byShard.size === 0) return undefined;
    const pushes = [...this.byShard.values()];
    const dense = pushes
      .flatMap((push) => push.dense)
      .filter((tensor) => shardOf(tensor.name!, now.shardCount) === shard);
    const sparse = replaceRows(
      pushes.flatMap((push) => push.sparse),
      shard,
      now,
    );
    const carrying = pushes.filter((p) => p.dense.length > 0 || p.sparse.length > 0);
    const stepCount = carrying.find((p) => p.sampleCount !== undefined)?.sampleCount;
    const empty = dense.length === 0 && sparse.length === 0;
    return { dense, sparse, sampleCount: empty ? 0 : stepCount };
  }
}

/** The rows of `grads` (one SparseGrad per table and old shard) that `shard` holds under `now`. */
function replaceRows(grads: readonly SparseGrad[], shard: number, now: Placement): SparseGrad[] {
  const byTable = new Map<string, SparseGrad[]>();
  for (const grad of grads) byTable.set(grad.table!, [...(byTable.get(grad.table!) ?? []), grad]);
  const out: SparseGrad[] = [];
  for (const [table, parts] of byTable) {
    const layout = now.tables.get(table);
    // The client routed these rows by the layout, so it knows it.
    if (!layout) throw new Error(`StepPushes: table ${table} has no layout`);
    const ids = Buffer.concat(parts.map((p) => Buffer.from(p.ids as Uint8Array)));
    const rows = Buffer.concat(parts.map((p) => Buffer.from(p.grads as Uint8Array)));
    const withCounts = parts.every((p) => p.counts !== undefined && p.counts.length > 0);
    const counts = withCounts
      ? Buffer.concat(parts.map((p) => Buffer.from(p.counts as Uint8Array)))
      : undefined;
    const owners = now.tables.shardsOf(layout, now.shardCount);
    const buckets = bucketsOfIds(
      new Uint8Array(ids.buffer, ids.byteOffset, ids.length),
      layout.buckets,
    );
    const rowBytes = layout.dim * 4;
    const kept: number[] = [];
    for (let k = 0; k < buckets.length; k++) if (owners[buckets[k]!] === shard) kept.push(k);
    if (kept.length === 0) continue;
    const pick = (from: Buffer, width: number): Buffer =>
      Buffer.concat(kept.map((k) => from.subarray(k * width, (k + 1) * width)));
    out.push({
      table,
      ids: pick(ids, 8),
      grads: pick(rows, rowBytes),
      ...(counts ? { counts: pick(counts, 4) } : {}),
    });
  }
  return out;
}
