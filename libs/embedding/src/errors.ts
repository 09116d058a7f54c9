/**
 * Error codes of the embedding library. No RPC answers with them yet; when sparse tables join the
 * contract they become proto `ErrorCode` values (`EMBEDDING_CAPACITY_EXHAUSTED` under
 * RESOURCE_EXHAUSTED, `EMBEDDING_INVALID_ARGUMENT` under INVALID_ARGUMENT).
 */
export type EmbeddingErrorCode = 'EMBEDDING_INVALID_ARGUMENT' | 'EMBEDDING_CAPACITY_EXHAUSTED';

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
