import type { JobState } from '@pserver/coordination';
import type { ReshapeStatus } from '@pserver/proto';

/**
 * The pending change of the shard count as Status and SetDesiredShards say it: the counts, the
 * old indices restored from, the new ones that restored (`corrupt` when the record is
 * unreadable) — or, while a running job's primaries hand their shards back (`live`), the old
 * indices handed back, the receivers of the new ones, and what the old primaries said of their
 * copies; undefined when none is pending.
 */
export function reshapeStatusOf(
  state: Pick<JobState, 'reshape' | 'corruptReshape'> & Partial<Pick<JobState, 'liveReshape'>>,
): ReshapeStatus | undefined {
  const none = {
    sources: [],
    restored: [],
    corrupt: '',
    live: false,
    handedBack: [],
    receivers: [],
    copied: [],
    caughtUp: [],
  };
  if (state.corruptReshape !== undefined)
    return { ...none, fromShardCount: 0, toShardCount: 0, corrupt: state.corruptReshape };
  const live = state.liveReshape;
  if (live)
    return {
      ...none,
      fromShardCount: live.from,
      toShardCount: live.to,
      live: true,
      handedBack: live.handedBack.filter((i) => i < live.from),
      receivers: live.receivers.filter((r) => r.index < live.to),
      copied: live.copied.filter((i) => i < live.from),
      caughtUp: live.caughtUp.filter((i) => i < live.from),
    };
  const reshape = state.reshape;
  if (!reshape) return undefined;
  return {
    ...none,
    fromShardCount: reshape.from,
    toShardCount: reshape.to,
    sources: [...reshape.sources.keys()].sort((a, b) => a - b),
    restored: reshape.restored.filter((i) => i < reshape.to),
  };
}
