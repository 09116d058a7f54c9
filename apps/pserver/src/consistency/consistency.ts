import { parseConsistency, type JobConsistency } from '@pserver/coordination';
import type { Shard } from '../shard/shard';
import { AsyncConsistency } from './async-consistency';
import type { Roster } from './roster';
import type { ShardConsistency, ShardConsistencyHooks } from './shard-consistency';
import { SspConsistency } from './ssp-consistency';
import { SyncConsistency } from './sync-consistency';

/**
 * Reads a standalone pserver's `--consistency` (`async`, `sync`, `ssp:<s>`) for the roster of
 * trainers 1..`trainers` (`--sync-trainers`) with, in SYNC, `replicasToAggregate` of them closing
 * a step (0: all) and `failover` its policy (`--sync-failover`). Throws an Error whose message names the flag and the value.
 */
export function standaloneConsistency(
  text: string,
  trainers: number,
  replicasToAggregate = 0,
  failover = 'rerun',
): JobConsistency {
  const consistency = parseConsistency(text, replicasToAggregate, failover);
  if (consistency.mode === 'async') return consistency;
  if (trainers < 1)
    throw new Error(`--consistency ${text} needs --sync-trainers (the trainers of a step)`);
  if (replicasToAggregate > trainers)
    throw new Error(
      `--replicas-to-aggregate ${replicasToAggregate} is above --sync-trainers ${trainers}`,
    );
  return consistency;
}

/** The consistency mode `config` names, acting on `shard` for `roster`. */
export function consistencyFor(
  config: JobConsistency,
  roster: Roster,
  shard: Shard,
  hooks: ShardConsistencyHooks = {},
): ShardConsistency {
  switch (config.mode) {
    case 'async':
      return new AsyncConsistency(shard, hooks);
    case 'ssp':
      return new SspConsistency(config, roster, shard, hooks);
    case 'sync':
      return new SyncConsistency(config, roster, shard, hooks);
  }
}
