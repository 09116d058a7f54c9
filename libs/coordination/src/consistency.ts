import type { Consistency } from '@pserver/proto';

/**
 * A job's consistency mode, fixed when the job first starts (cluster: the master's
 * `--consistency`, kept in `config/consistency`; standalone: each pserver's flags). SYNC and SSP
 * count steps over a roster: the trainers whose pushes a step waits for.
 */
export type JobConsistency =
  | { mode: 'async' }
  | {
      mode: 'sync';
      /** Contributions that close a step (K); all the roster's members when 0 or above it. */
      replicasToAggregate: number;
      /** What a shard does about contributions to its open step lost with a failover. */
      failover: SyncFailover;
    }
  | { mode: 'ssp'; staleness: number };

/**
 * SYNC after a failover, for a trainer that finished a step the shard still has open without its
 * contribution: `rerun` (default) asks the trainer to send that push again
 * (PSERVER_RESEND_STEP), so the step closes with exactly the contributions it would have had;
 * `continue` closes it without them (counted as lost), never waiting for a trainer.
 */
export type SyncFailover = 'rerun' | 'continue';

export const syncFailovers: readonly SyncFailover[] = ['rerun', 'continue'];

export const asynchronous: JobConsistency = { mode: 'async' };

/**
 * Reads `--consistency` (`async`, `sync`, `ssp:<s>`) and, in SYNC, `--replicas-to-aggregate` and
 * `--sync-failover`. Throws an Error whose message names the flag and the value.
 */
export function parseConsistency(
  text: string,
  replicasToAggregate = 0,
  failover = 'rerun',
): JobConsistency {
  if (!isSyncFailover(failover))
    throw new Error(`--sync-failover: expected rerun or continue, got '${failover}'`);
  if (text === 'async') return asynchronous;
  if (text === 'sync') return { mode: 'sync', replicasToAggregate, failover };
  const ssp = /^ssp:(\d{1,9})$/.exec(text);
  if (ssp) return { mode: 'ssp', staleness: Number(ssp[1]) };
  throw new Error(`--consistency: expected async, sync or ssp:<staleness>, got '${text}'`);
}

/** The mode in words, for logs and messages: `async`, `sync`, `sync (continue)`, `ssp:<s>`. */
export function describeConsistency(config: JobConsistency): string {
  if (config.mode === 'ssp') return `ssp:${config.staleness}`;
  return config.mode === 'sync' && config.failover === 'continue' ? 'sync (continue)' : config.mode;
}

function isSyncFailover(text: unknown): text is SyncFailover {
  return syncFailovers.includes(text as SyncFailover);
}

/** The mode as the cluster view and GetShardStatus carry it. */
export function consistencyMessage(config: JobConsistency): Consistency {
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

/**
 * What `config/consistency` holds (JSON of a `JobConsistency`); ASYNC when absent (a job started
 * before the key existed). Throws on a value this version cannot read: a pserver must not guess
 * the mode of a job.
 */
export function consistencyFromStored(json: string | undefined): JobConsistency {
  if (json === undefined) return asynchronous;
  const value = JSON.parse(json) as Partial<Record<string, unknown>>;
  const count = (field: string): number => {
    const n = value[field] ?? 0;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0)
      throw new Error(`config/consistency: ${field} ${JSON.stringify(n)} is not a count`);
    return n;
  };
  switch (value['mode']) {
    case 'async':
      return asynchronous;
    case 'sync': {
      // Jobs stored before the policy existed take the default.
      const failover = value['failover'] ?? 'rerun';
      if (!isSyncFailover(failover))
        throw new Error(`config/consistency: unknown failover in ${json}`);
      return { mode: 'sync', replicasToAggregate: count('replicasToAggregate'), failover };
    }
    case 'ssp':
      return { mode: 'ssp', staleness: count('staleness') };
    default:
      throw new Error(`config/consistency: unknown mode in ${json}`);
  }
}
