import type { Consistency } from '@pserver/proto';

/**
 * The job's consistency mode, fixed when it first starts (standalone: `--consistency`,
 * `--sync-trainers`). SYNC and SSP count steps over a roster: the trainers whose pushes a step
 * waits for, ascending.
 */
export type ConsistencyConfig =
  | { mode: 'async' }
  | {
      mode: 'sync';
      roster: readonly number[];
      /** Contributions that close a step (K); the roster's size when 0 or above it. */
      replicasToAggregate: number;
    }
  | { mode: 'ssp'; roster: readonly number[]; staleness: number };

export const asynchronous: ConsistencyConfig = { mode: 'async' };

/**
 * Reads `--consistency` (`async`, `sync`, `ssp:<s>`) with the standalone roster of trainers
 * 1..`trainers` and, in SYNC, `replicasToAggregate` of them closing a step (0: all). Throws an
 * Error whose message names the flag and the value.
 */
export function parseConsistency(
  text: string,
  trainers: number,
  replicasToAggregate = 0,
): ConsistencyConfig {
  const roster = Array.from({ length: trainers }, (_, i) => i + 1);
  const needsRoster = (): void => {
    if (trainers < 1)
      throw new Error(`--consistency ${text} needs --sync-trainers (the trainers of a step)`);
  };
  if (text === 'async') return asynchronous;
  if (text === 'sync') {
    needsRoster();
    if (replicasToAggregate > trainers)
      throw new Error(
        `--replicas-to-aggregate ${replicasToAggregate} is above --sync-trainers ${trainers}`,
      );
    return { mode: 'sync', roster, replicasToAggregate };
  }
  const ssp = /^ssp:(\d{1,9})$/.exec(text);
  if (ssp) {
    needsRoster();
    return { mode: 'ssp', roster, staleness: Number(ssp[1]) };
  }
  throw new Error(`--consistency: expected async, sync or ssp:<staleness>, got '${text}'`);
}

/** The mode as GetShardStatus reports it. */
export function consistencyMessage(config: ConsistencyConfig): Consistency {
  switch (config.mode) {
    case 'async':
      return { mode: 'CONSISTENCY_MODE_ASYNC', staleness: 0, replicasToAggregate: 0 };
    case 'sync':
      return {
        mode: 'CONSISTENCY_MODE_SYNC',
        staleness: 0,
        replicasToAggregate: config.replicasToAggregate,
      };
    case 'ssp':
      return {
        mode: 'CONSISTENCY_MODE_BOUNDED_STALENESS',
        staleness: config.staleness,
        replicasToAggregate: 0,
      };
  }
}

/** The mode in words, for logs and messages: `async`, `sync`, `ssp:<s>`. */
export function describeConsistency(config: ConsistencyConfig): string {
  return config.mode === 'ssp' ? `ssp:${config.staleness}` : config.mode;
}
