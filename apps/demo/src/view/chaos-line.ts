import type { ChaosEvent } from '../run/chaos';

/** The story's line for a kill, a takeover or a resumption. */
export function chaosLine({ kind, failure: f }: ChaosEvent): string {
  const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  switch (kind) {
    case 'killed':
      return f.target === 'pserver'
        ? `kill -9 ${f.victim} (pid ${f.pid}), serving shard ${f.index} at lease epoch ${f.epochBefore}`
        : `kill -9 ${f.victim} (pid ${f.pid}), the leading master`;
    case 'taken over':
      return f.target === 'pserver'
        ? `${f.takenOverBy} serves shard ${f.index} (lease epoch ${f.epochAfter}) ${seconds(f.takenOverAt! - f.killedAt)} after the kill` +
            (f.restoredUpdates !== undefined
              ? `, from its checkpoint: ${f.restoredUpdates} updates, read in ${f.restoreMs} ms`
              : '')
        : `${f.takenOverBy} leads, ${seconds(f.takenOverAt! - f.killedAt)} after the kill`;
    case 'resumed':
      return `every trainer is stepping again: ${seconds(f.resumedAt! - f.killedAt)} lost to the kill of ${f.victim}`;
  }
}
