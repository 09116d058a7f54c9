import { IdIndex } from '@pserver/embedding';
import type { RowMean } from '../shard/shard';
import type { ShardTable } from '../shard/table-spec';

/**
 * One contribution's row gradients of a table, as `SparseTable.checkPush` merged them: each id
 * once (duplicates summed), with its occurrences (for counting admission).
 */
export interface ContributedRows {
  table: ShardTable;
  /** The ids' low and high 32 bits. */
  lo: Uint32Array;
  hi: Uint32Array;
  occurrences: Uint32Array;
  /** One row of `dim` float32 values per id. */
  grads: Float32Array;
}

/**
 * A table's aggregate in the open SYNC step: Σ wᵢ·gᵢ of every row some contribution pushed, in
 * the order rows first appeared as contributions were folded (ascending trainer id), and the
 * occurrences summed. Rows a contribution did not push are zero in its gradient, so the mean
 * divides every row by the step's total weight, as a dense tensor's mean would. Each float32
 * operation is rounded on its own, as the dense fold's.
 */
export class RowSums {
  /** Each id's row here: the tables' own index, no allocation per id. */
  private readonly at = new IdIndex();
  private lo: number[] = [];
  private hi: number[] = [];
  private occurrences: number[] = [];
  private sums = new Float32Array(0);

  constructor(readonly table: ShardTable) {}

  get rows(): number {
    return this.lo.length;
  }

  /** Adds w·g for each row of `rows`. */
  fold({ lo, hi, occurrences, grads }: ContributedRows, weight: number): void {
    const dim = this.table.table.dim;
    const w = Math.fround(weight);
    for (let k = 0; k < lo.length; k++) {
      let row = this.at.get(lo[k]!, hi[k]!);
      const from = k * dim;
      if (row < 0) {
        row = this.lo.length;
        this.at.insert(lo[k]!, hi[k]!, row);
        this.lo.push(lo[k]!);
        this.hi.push(hi[k]!);
        this.occurrences.push(0);
        this.grow(row + 1, dim);
        const o = row * dim;
        for (let i = 0; i < dim; i++)
          this.sums[o + i] = w === 1 ? grads[from + i]! : w * grads[from + i]!;
      } else {
        const o = row * dim;
        for (let i = 0; i < dim; i++)
          this.sums[o + i] =
            this.sums[o + i]! + (w === 1 ? grads[from + i]! : Math.fround(w * grads[from + i]!));
      }
      this.occurrences[row] = this.occurrences[row]! + occurrences[k]!;
    }
  }

  /** Each row's sum divided by `totalWeight` (positive), as bytes a push carries. */
  mean(totalWeight: number): RowMean {
    const n = this.lo.length;
    const dim = this.table.table.dim;
    const grads = this.sums.slice(0, n * dim);
    if (totalWeight !== 1) {
      const w = Math.fround(totalWeight);
      for (let i = 0; i < grads.length; i++) grads[i] = grads[i]! / w;
    }
    const ids = new Uint32Array(2 * n);
    for (let k = 0; k < n; k++) {
      ids[2 * k] = this.lo[k]!;
      ids[2 * k + 1] = this.hi[k]!;
    }
    const counts = Uint32Array.from(this.occurrences, (c) => Math.min(c, 0xffffffff));
    return {
      table: this.table,
      ids: new Uint8Array(ids.buffer),
      grads: new Uint8Array(grads.buffer),
      counts: new Uint8Array(counts.buffer),
    };
  }

  private grow(rows: number, dim: number): void {
    if (rows * dim <= this.sums.length) return;
    const bigger = new Float32Array(Math.max(rows * dim, 2 * this.sums.length));
    bigger.set(this.sums);
    this.sums = bigger;
  }
}
