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
  /** The job runs: who receives each new index's slices while the old shards serve. */
  receivers?: { index: number; member: string }[];
  /** The job runs: the old indices whose every receiver loaded its copy. */
  copied?: number[];
  /** The job runs: the old indices whose receivers hold the whole shard, pushes refused. */
  caughtUp?: number[];
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
    ...(status.live && {
      handedBack: status.handedBack,
      receivers: status.receivers.map(({ index, member }) => ({ index, member })),
      copied: status.copied,
      caughtUp: status.caughtUp,
    }),
  };
}

/** One line: the reshape's counts, who restored and who has yet to. */
export function reshapeLine(reshape: PendingReshape): string {
  if (reshape.corrupt !== undefined)
    return `reshape: CORRUPT record (${reshape.corrupt}); repair or delete it with etcdctl`;
  if (reshape.handedBack) {
    const done = new Set(reshape.handedBack);
    const waiting = Array.from({ length: reshape.from }, (_, i) => i).filter((i) => !done.has(i));
    const receivers = reshape.receivers ?? [];
    const missing = reshape.to - receivers.length;
    return [
      `reshape ${reshape.from} → ${reshape.to} under way: shards handed back ${list(reshape.handedBack)}; waiting for ${list(waiting)}`,
      `  receivers, copying while the old shards serve: ${receivers.length === 0 ? 'none' : receivers.map((r) => `${r.index} ← ${r.member}`).join(', ')}` +
        (missing > 0
          ? ` (${missing} ${missing === 1 ? 'index' : 'indices'} without one: restored from final checkpoints)`
          : ''),
      `  copies loaded of old ${list(reshape.copied ?? [])}; receivers holding the whole shard of old ${list(reshape.caughtUp ?? [])} (of every old one: no final checkpoint)`,
    ].join('\n');
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
      `the job runs at ${reshape.from} shards: a receiver of each new shard copies its slices while they serve, then the primaries refuse pushes together and hand their shards back, and each receiver serves its share (trainers wait meanwhile and re-run their step)`,
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
