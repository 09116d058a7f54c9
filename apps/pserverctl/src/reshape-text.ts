import type { ReshapeStatus__Output, SetDesiredShardsResponse__Output } from '@pserver/proto';

/** A change of the shard count still being restored, as `status` and `shards` show it. */
export interface PendingReshape {
  from: number;
  to: number;
  /** The old indices restored from (those that committed a checkpoint). */
  sources: number[];
  /** The new indices that restored their share. */
  restored: number[];
  /** Why the record cannot be read (the counts are then 0). */
  corrupt?: string;
  /** The job runs and its primaries are handing their shards back: those that did. */
  handedBack?: number[];
}

/** The master's `ReshapeStatus`, or undefined when none is pending. */
export function pendingReshapeOf(
  status: ReshapeStatus__Output | null | undefined,
): PendingReshape | undefined {
  if (!status) return undefined;
  return {
    from: status.fromShardCount,
    to: status.toShardCount,
    sources: status.sources,
    restored: status.restored,
    ...(status.corrupt && { corrupt: status.corrupt }),
    ...(status.live && { handedBack: status.handedBack }),
  };
}

/** One line: the reshape's counts, who restored and who has yet to. */
export function reshapeLine(reshape: PendingReshape): string {
  if (reshape.corrupt !== undefined)
    return `reshape: CORRUPT record (${reshape.corrupt}); repair or delete it with etcdctl`;
  if (reshape.handedBack) {
    const done = new Set(reshape.handedBack);
    const waiting = Array.from({ length: reshape.from }, (_, i) => i).filter((i) => !done.has(i));
    return `reshape ${reshape.from} → ${reshape.to} under way: shards handed back ${list(reshape.handedBack)}; waiting for ${list(waiting)} (each commits a final checkpoint first)`;
  }
  const restored = new Set(reshape.restored);
  const waiting = Array.from({ length: reshape.to }, (_, i) => i).filter((i) => !restored.has(i));
  const sources =
    reshape.sources.length === 0
      ? 'no old index had a checkpoint'
      : `from the checkpoints of old ${reshape.sources.length === 1 ? 'index' : 'indices'} ${list(reshape.sources)}`;
  return `reshape ${reshape.from} → ${reshape.to} pending: restored ${list(reshape.restored)}; waiting for ${list(waiting)} (${sources})`;
}

/** What `pserverctl shards <count>` did, in words. */
export function shardsText(answer: SetDesiredShardsResponse__Output): string {
  const reshape = pendingReshapeOf(answer.reshape);
  const changed = answer.previousShardCount !== answer.shardCount;
  const lines = [
    changed
      ? `the job's shard count is set to ${answer.shardCount} (was ${answer.previousShardCount})`
      : `the job's shard count is ${answer.shardCount} already: nothing changed`,
  ];
  if (changed && reshape?.handedBack)
    lines.push(
      `the job runs at ${reshape.from} shards: each primary commits a final checkpoint and hands its shard back, then ${reshape.to} of the job's pservers each restore their share and serve (trainers wait meanwhile and re-run their step)`,
    );
  else if (changed && reshape && reshape.corrupt === undefined)
    lines.push(
      `its checkpoints were written by ${reshape.from} shards: start ${reshape.to} pservers; each restores its share of them before it serves`,
    );
  if (reshape) lines.push(reshapeLine(reshape));
  return `${lines.join('\n')}\n`;
}

function list(indices: number[]): string {
  if (indices.length === 0) return 'none';
  const shown = indices.slice(0, 20).join(', ');
  return indices.length > 20 ? `${shown} and ${indices.length - 20} more` : shown;
}
