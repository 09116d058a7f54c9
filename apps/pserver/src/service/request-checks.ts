import type { SparseGrad__Output } from '@pserver/proto';
import { PserverError } from '../shard/errors';

/**
 * uint64 fields arrive as JS numbers (the loader's `longs: Number`), exact only up to 2^53 − 1.
 * Beyond, distinct values round to one (two trainers would share step marks) and the rounded
 * value is what replies and checkpoints carry back (a step of 2^64 − 1 would be stored as 0), so
 * such values are refused rather than stored wrong.
 */
export function beyondSafeInteger(
  field: string,
  value: number,
  code: 'PSERVER_INVALID_ARGUMENT' | 'PSERVER_INVALID_CONTEXT' = 'PSERVER_INVALID_ARGUMENT',
): PserverError {
  return new PserverError(
    code,
    `${field}: must be at most 2^53 − 1 (larger values are not kept exactly), got ${value}`,
  );
}

/**
 * A push's weight: its sample count, 1 when unset. 0 (a step without data) must come without
 * gradients, and a push without gradients must say 0.
 */
export function checkSampleCount(sampleCount: number | undefined, gradients: number): number {
  const weight = sampleCount ?? 1;
  if (!Number.isSafeInteger(weight)) throw beyondSafeInteger('sampleCount', weight);
  if (weight === 0 && gradients > 0)
    throw new PserverError(
      'PSERVER_INVALID_ARGUMENT',
      'sampleCount: 0 (a step without data) with gradients: send none, or the count they came from',
    );
  if (weight > 0 && gradients === 0)
    throw new PserverError(
      'PSERVER_INVALID_ARGUMENT',
      'grads: empty push (a step without data says sampleCount 0)',
    );
  return weight;
}

/** The bytes a push's row slices carry (its admission counts them). */
export function sparseBytes(sparse: readonly SparseGrad__Output[]): number {
  return sparse.reduce(
    (total, g) => total + g.ids.byteLength + g.grads.byteLength + g.counts.byteLength,
    0,
  );
}

/** The read step of a request outside a push (0: a read outside any step). */
export function readStep(step: number | undefined): number {
  const value = step ?? 0;
  if (!Number.isSafeInteger(value))
    throw beyondSafeInteger('context.step', value, 'PSERVER_INVALID_CONTEXT');
  return value;
}
