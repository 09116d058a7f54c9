/**
 * Error codes of the embedding library. The pserver maps them to proto `ErrorCode` values
 * (`EMBEDDING_CAPACITY_EXHAUSTED` to PSERVER_TABLE_FULL, the others to their PSERVER_ namesakes).
 */
export type EmbeddingErrorCode =
  | 'EMBEDDING_INVALID_ARGUMENT'
  | 'EMBEDDING_CAPACITY_EXHAUSTED'
  /** A sparse push or pull whose bytes do not hold whole ids, rows or counts. */
  | 'EMBEDDING_LENGTH_MISMATCH'
  /** An id whose bucket another shard holds. */
  | 'EMBEDDING_WRONG_SHARD'
  /** A gradient row holding NaN or ±Infinity (tables reject the whole push). */
  | 'EMBEDDING_NON_FINITE_GRADIENT';

/** A typed error whose message names the thing at fault and its value. */
export class EmbeddingError extends Error {
  override readonly name = 'EmbeddingError';

  constructor(
    readonly code: EmbeddingErrorCode,
    message: string,
    /** The option (`rowsPerChunk`) or the thing (`row`, `ids`) at fault. */
    readonly field: string,
    readonly value: unknown,
  ) {
    super(message);
  }
}

export function invalidArgument(field: string, value: unknown, rule: string): EmbeddingError {
  return new EmbeddingError(
    'EMBEDDING_INVALID_ARGUMENT',
    `${field} ${rule}, got ${String(value)}`,
    field,
    value,
  );
}

export function capacityExhausted(field: string, value: number, limit: string): EmbeddingError {
  return new EmbeddingError(
    'EMBEDDING_CAPACITY_EXHAUSTED',
    `${field}: cannot hold ${value}, ${limit}`,
    field,
    value,
  );
}
