import { backoffPolicies, retry, RetryDeadlineError } from '@pserver/rpc';
import type { Connection } from './connection';
import { jobStatus, type JobStatus } from './job-status';

/** What `pserverctl drain` did. */
export interface DrainResult {
  member: string;
  role: 'primary' | 'replica' | 'spare';
  /** A primary's shard: its epoch before, and who serves it after, at which epoch. */
  index?: number;
  epoch?: number;
  successor?: { member: string; epoch: number };
  /** From the Drain call to the shard served again (a primary) or the call's answer. */
  seconds: number;
}

export interface DrainOptions {
  /** Drain a primary even with no spare or in-sync replica to take the shard over. */
  force: boolean;
  /** How long to wait for the shard to be served again. */
  waitMs: number;
}

/**
 * Drains `member`: asks it to hand its role over and stop (the pserver's Drain: a final
 * checkpoint, its lease revoked), then, for a primary, waits until another pserver serves the
 * shard at a higher epoch. A primary with no spare and no in-sync replica to take over is
 * refused unless `force`: its shard would go unserved until a pserver joins.
 */
export async function drain(
  connection: Connection,
  masters: string[],
  member: string,
  options: DrainOptions,
): Promise<DrainResult> {
  const before = await jobStatus(connection, masters);
  if (!before.job) throw new Error('no master leads the job: nothing can take a shard over');
  const found = locate(before, member);
  if (found.role === 'primary' && !options.force) {
    const shard = before.shards.find((s) => s.index === found.index)!;
    if (before.spares.length === 0 && !shard.replicas.some((r) => r.inSync))
      throw new Error(
        `${member} serves shard ${found.index} and no spare or in-sync replica could take it over: it would go unserved until a pserver joins (add one, or --force)`,
      );
  }
  const startedAt = performance.now();
  const answer = await connection.drain(found.address);
  const seconds = (): number => (performance.now() - startedAt) / 1000;
  if (found.role !== 'primary') return { member, role: found.role, seconds: seconds() };
  const epoch = Number(answer.shardEpoch);
  // Another pserver serving the shard at a higher epoch; undefined while none does (or no master
  // answers: they may be failing over too).
  const successor = async (): Promise<{ member: string; epoch: number } | undefined> => {
    const now = await jobStatus(connection, masters).catch(() => undefined);
    const shard = now?.shards.find((s) => s.index === found.index);
    return shard?.state === 'serving' && shard.member !== member && shard.epoch > epoch
      ? { member: shard.member, epoch: shard.epoch }
      : undefined;
  };
  try {
    const next = await retry(successor, {
      policy: backoffPolicies.drainPoll,
      timeoutMs: options.waitMs,
      again: (next) => next === undefined,
    });
    return {
      member,
      role: 'primary',
      index: found.index,
      epoch,
      successor: next!,
      seconds: seconds(),
    };
  } catch (err) {
    if (!(err instanceof RetryDeadlineError)) throw err;
    throw new Error(
      `${member} handed shard ${found.index} over, but no pserver serves it again within ${options.waitMs / 1000} s (pserverctl status shows where it is)`,
      { cause: err },
    );
  }
}

function locate(
  status: JobStatus,
  member: string,
): { role: DrainResult['role']; address: string; index?: number } {
  const primary = status.shards.find((s) => s.member === member);
  if (primary) return { role: 'primary', address: primary.address, index: primary.index };
  const replica = status.shards.flatMap((s) => s.replicas).find((r) => r.member === member);
  if (replica) return { role: 'replica', address: replica.address };
  const spare = status.spares.find((s) => s.member === member);
  if (spare) return { role: 'spare', address: spare.address };
  const members = [
    ...status.shards.map((s) => s.member),
    ...status.shards.flatMap((s) => s.replicas.map((r) => r.member)),
    ...status.spares.map((s) => s.member),
  ].filter(Boolean);
  throw new Error(
    `no pserver named ${member} in job ${status.job} (its pservers: ${members.join(', ') || 'none'})`,
  );
}

/** One line for a terminal. */
export function drainText(result: DrainResult): string {
  if (result.role !== 'primary') return `${result.member} (${result.role}) left\n`;
  return `shard ${result.index}: ${result.member} → ${result.successor!.member} (epoch ${result.epoch} → ${result.successor!.epoch}), served again after ${result.seconds.toFixed(1)} s\n`;
}
