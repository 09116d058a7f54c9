import { parseConsistency, type JobConsistency } from '@pserver/coordination';

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
