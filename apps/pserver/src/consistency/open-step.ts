import type { GradientBuffer } from '@pserver/optimizer';
import type { StoredTensor } from '../shard/stored-tensor';
import type { RowMean } from '../shard/shard';
import { RowSums, type ContributedRows } from './row-sums';

/** One roster member's push to the open step: its weight and its (finite) gradients. */
export interface Contribution {
  trainerId: number;
  /** The push's sample count (1 when unset); 0 contributes nothing but the member's arrival. */
  weight: number;
  /** Buffers this step owns from now on: folded into the sums, then released. */
  gradients: { tensor: StoredTensor; buffer: GradientBuffer }[];
  /** Row gradients, per table (checked and merged already). */
  rows: ContributedRows[];
}

/** What a closed step applies: each tensor's mean, and each table's rows. */
export interface StepMeans {
  tensors: TensorSum[];
  tables: RowMean[];
}

/** A tensor's aggregate: Σ wᵢ·gᵢ so far, in the first contributor's buffer, and Σ wᵢ. */
export interface TensorSum {
  tensor: StoredTensor;
  buffer: GradientBuffer;
  weight: number;
}

/**
 * The open step of SYNC on one shard: the contributions of the roster's members, folded into one
 * weighted sum per tensor **in ascending trainer order**, whatever order they arrive in, so that
 * the result is the same bits on every run and every shard count. A contribution is folded as
 * soon as every member before it has been (a cursor over the roster); one that arrives ahead of
 * a gap waits, so at most roster − 1 are held. At the close the waiting ones are folded in order,
 * skipping members that never came, and each sum is divided by its weight.
 *
 * The arithmetic, in the tensor's element type with each operation rounded (float32 tensors:
 * every product and sum rounded to float32, as numpy float32 does): acc = w₁·g₁, then
 * acc = acc + wᵢ·gᵢ for each later contribution, then acc / Σwᵢ. A weight of 1 multiplies by
 * nothing, a total weight of 1 divides by nothing (both exact).
 */
export class OpenStep {
  private readonly arrived = new Set<number>();
  /** Contributions not folded yet, by roster position. */
  private readonly waiting = new Map<number, Contribution>();
  private readonly position: Map<number, number>;
  private cursor = 0;
  private readonly sums = new Map<string, TensorSum>();
  private readonly rowSums = new Map<string, RowSums>();
  /** Σ wᵢ over every contribution folded: a table's rows are divided by it. */
  private totalWeight = 0;

  constructor(
    /** The step's number: the shard's closed steps + 1. */
    readonly step: number,
    /** Who counts, ascending. */
    roster: readonly number[],
  ) {
    this.position = new Map(roster.map((trainerId, i) => [trainerId, i]));
  }

  /**
   * A member that joined the roster after the step opened: it goes after every member before it
   * (ids only grow, so the order stays ascending).
   */
  expect(trainerId: number): void {
    if (!this.position.has(trainerId)) this.position.set(trainerId, this.position.size);
  }

  /** Whether `trainerId` contributed to this step. */
  has(trainerId: number): boolean {
    return this.arrived.has(trainerId);
  }

  /** The members that contributed. */
  get contributors(): number[] {
    return [...this.arrived];
  }

  /**
   * Adds a member's contribution (the caller checked membership and that it is its first for the
   * step) and folds what is ready.
   */
  add(contribution: Contribution): void {
    const at = this.position.get(contribution.trainerId);
    if (at === undefined || this.arrived.has(contribution.trainerId))
      throw new Error(`trainer ${contribution.trainerId}: not an expected contributor`);
    this.arrived.add(contribution.trainerId);
    this.waiting.set(at, contribution);
    while (this.waiting.has(this.cursor)) {
      this.fold(this.waiting.get(this.cursor)!);
      this.waiting.delete(this.cursor++);
    }
  }

  /**
   * Folds what waits, in roster order, and turns each sum into the weighted mean. Returns the
   * tensors to update — those with a positive weight — and the tables' rows (divided by the
   * step's total weight: a row a trainer did not push is zero in its gradient). The step is spent
   * afterwards; the buffers returned are the caller's to release.
   */
  close(): StepMeans {
    for (const at of [...this.waiting.keys()].sort((a, b) => a - b))
      this.fold(this.waiting.get(at)!);
    this.waiting.clear();
    const tensors: TensorSum[] = [];
    for (const sum of this.sums.values()) {
      if (sum.weight > 0) {
        divide(sum.buffer.values, sum.weight);
        tensors.push(sum);
      } else sum.buffer.release();
    }
    this.sums.clear();
    const tables =
      this.totalWeight > 0
        ? [...this.rowSums.values()]
            .filter((sums) => sums.rows > 0)
            .map((sums) => sums.mean(this.totalWeight))
        : [];
    this.rowSums.clear();
    return { tensors, tables };
  }

  /** Frees everything held (the shard's state was replaced, or the step is abandoned). */
  discard(): void {
    for (const { gradients } of this.waiting.values())
      for (const { buffer } of gradients) buffer.release();
    this.waiting.clear();
    for (const { buffer } of this.sums.values()) buffer.release();
    this.sums.clear();
    this.rowSums.clear();
  }

  private fold({ weight, gradients, rows }: Contribution): void {
    this.totalWeight += weight;
    for (const part of rows) {
      const name = part.table.table.name;
      let sums = this.rowSums.get(name);
      if (!sums) this.rowSums.set(name, (sums = new RowSums(part.table)));
      sums.fold(part, weight);
    }
    for (const { tensor, buffer } of gradients) {
      const sum = this.sums.get(tensor.name);
      if (!sum) {
        scale(buffer.values, weight);
        // Its bytes change from here on: what was scanned of them as they arrived no longer holds.
        buffer.filled(0);
        this.sums.set(tensor.name, { tensor, buffer, weight });
      } else {
        addScaled(sum.buffer.values, buffer.values, weight);
        sum.weight += weight;
        buffer.release();
      }
    }
  }
}

type Vector = Float32Array | Float64Array;

/** v := w·v, rounded to v's type (a typed array's store rounds). */
function scale(v: Vector, w: number): void {
  if (w === 1) return;
  const weight = v instanceof Float32Array ? Math.fround(w) : w;
  for (let i = 0; i < v.length; i++) v[i] = weight * v[i]!;
}

/** acc := acc + w·g, each operation rounded to acc's type. */
function addScaled(acc: Vector, g: Vector, w: number): void {
  const n = acc.length;
  if (w === 1) {
    for (let i = 0; i < n; i++) acc[i] = acc[i]! + g[i]!;
  } else if (acc instanceof Float32Array) {
    const weight = Math.fround(w);
    for (let i = 0; i < n; i++) acc[i] = acc[i]! + Math.fround(weight * g[i]!);
  } else {
    for (let i = 0; i < n; i++) acc[i] = acc[i]! + w * g[i]!;
  }
}

/** v := v / w, rounded to v's type. */
function divide(v: Vector, w: number): void {
  if (w === 1) return;
  const weight = v instanceof Float32Array ? Math.fround(w) : w;
  for (let i = 0; i < v.length; i++) v[i] = v[i]! / weight;
}
