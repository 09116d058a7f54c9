/**
 * Trailing-metadata keys of the contract (proto/README.md, "Errors"): structured facts travel
 * here, never only in a message's text.
 */
export const metadataKeys = {
  /** The domain error code, e.g. `PSERVER_ALREADY_INITIALIZED`. On every error. */
  errorCode: 'pserver-error-code',
  /** The shard's current epoch, on ABORTED (stale epoch). */
  shardEpoch: 'pserver-shard-epoch',
  /** The leader master's address, on UNAVAILABLE from a follower. */
  leader: 'pserver-leader',
  /** How long to back off before retrying, on RESOURCE_EXHAUSTED. */
  retryAfterMs: 'pserver-retry-after-ms',
} as const;

/** The facts an error can carry to the client. */
export interface ErrorFacts {
  shardEpoch?: number;
  leader?: string;
  retryAfterMs?: number;
}
