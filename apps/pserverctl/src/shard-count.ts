import type { SetDesiredShardsResponse__Output } from '@pserver/proto';
import { backoffPolicies, retry, RetryDeadlineError } from '@pserver/rpc';
import type { Connection } from './connection';
import { jobStatus, type JobStatus } from './job-status';

export interface ShardCountOptions {
  /** Ask even when the job has fewer pservers than the new count has shards. */
  force: boolean;
  /** How long to wait for the job to serve at the new count; undefined: return at once. */
  waitMs: number | undefined;
}

/** What `pserverctl shards` did: the master's answer, and how long the job took to serve at it. */
export interface ShardCountResult {
  answer: SetDesiredShardsResponse__Output;
  /** From the call to every shard of the new count serving, no change pending (when waited). */
  servedAfterSeconds?: number;
}

/**
 * Sets the job's shard count through the leader. A running job with fewer pservers than `count`
 * is refused unless `force`: its shards would be handed back with too few pservers to take the
 * new ones, and it would stop training until more join. With `waitMs`, waits until every shard
 * of the new count serves and no change is pending (a running job's primaries hand their shards
 * back, then the pservers restore their shares).
 */
export async function setShardCount(
  connection: Connection,
  masters: string[],
  count: number,
  options: ShardCountOptions,
): Promise<ShardCountResult> {
  const before = await jobStatus(connection, masters);
  const leader = before.masters.find((m) => m.role === 'leader');
  if (!leader) throw new Error('no master leads the job');
  const pservers = pserverCount(before);
  const running = before.shards.some((s) => s.address);
  if (running && before.initialized && pservers < count && !options.force)
    throw new Error(
      `the job has ${pservers} pserver${pservers === 1 ? '' : 's'} and ${count} shards need ${count}: start ${count - pservers} more first (or --force: the job stops training until they join)`,
    );
  const startedAt = performance.now();
  const answer = await connection.setDesiredShards(leader.address, count);
  const changed = answer.previousShardCount !== answer.shardCount || answer.reshape;
  if (options.waitMs === undefined || !changed) return { answer };
  try {
    await retry(() => jobStatus(connection, masters).catch(() => undefined), {
      policy: backoffPolicies.drainPoll,
      timeoutMs: options.waitMs,
      again: (now) => !now || (!servesAt(now, count) && !rolledBack(now, count)),
    }).then((now) => {
      if (now && rolledBack(now, count))
        throw new Error(
          `the change to ${count} shards was rolled back: the job serves on at ${now.shards.length} (the pservers and the leading master log why: a receiver did not copy its slices and catch up in time)`,
        );
    });
  } catch (err) {
    if (!(err instanceof RetryDeadlineError)) throw err;
    throw new Error(
      `the shard count was set to ${count}, but the job does not serve at it within ${options.waitMs / 1000} s (pserverctl status shows where it is)`,
      { cause: err },
    );
  }
  return { answer, servedAfterSeconds: (performance.now() - startedAt) / 1000 };
}

/** Every pserver the job has: primaries, replicas and spares, each once. */
function pserverCount(status: JobStatus): number {
  const members = new Set<string>();
  for (const shard of status.shards) {
    if (shard.member) members.add(shard.member);
    for (const replica of shard.replicas) members.add(replica.member);
  }
  for (const spare of status.spares) members.add(spare.member);
  return members.size;
}

/**
 * Whether the change to `count` is over without it: no change pending, the job serving every
 * shard of another count (a live change rolled back, or replaced).
 */
function rolledBack(status: JobStatus, count: number): boolean {
  return (
    !status.reshape &&
    status.shards.length !== count &&
    status.shards.length > 0 &&
    status.shards.every((s) => s.state === 'serving')
  );
}

/** Whether the job serves every shard of `count`, with no change of the count pending. */
function servesAt(status: JobStatus, count: number): boolean {
  return (
    !status.reshape &&
    status.shards.length === count &&
    status.shards.every((s) => s.state === 'serving')
  );
}
