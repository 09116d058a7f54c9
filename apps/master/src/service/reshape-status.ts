import type { JobState } from '@pserver/coordination';
import type { ReshapeStatus } from '@pserver/proto';

/**
 * The pending change of the shard count as Status and SetDesiredShards say it: the counts, the
 * old indices restored from, the new ones that restored (`corrupt` when the record is
 * unreadable); undefined when none is pending.
 */
export function reshapeStatusOf(
  state: Pick<JobState, 'reshape' | 'corruptReshape'>,
): ReshapeStatus | undefined {
  if (state.corruptReshape !== undefined)
    return {
      fromShardCount: 0,
      toShardCount: 0,
      sources: [],
      restored: [],
      corrupt: state.corruptReshape,
    };
  const reshape = state.reshape;
  if (!reshape) return undefined;
  return {
    fromShardCount: reshape.from,
    toShardCount: reshape.to,
    sources: [...reshape.sources.keys()].sort((a, b) => a - b),
    restored: reshape.restored.filter((i) => i < reshape.to),
    corrupt: '',
  };
}
