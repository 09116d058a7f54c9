import type { FailureEvent } from '../run/chaos';
import type { Growth, GrowthEvent } from '../run/live-growth';

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** The story's line for a kill, a takeover or a resumption, or a step of the growth. */
export function chaosLine(event: FailureEvent | GrowthEvent): string {
  if ('growth' in event) return growthLine(event);
  const { kind, failure: f } = event;
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

function growthLine({ kind, growth: g }: GrowthEvent): string {
  const sinceAsk = (at: number | undefined): string => seconds(at! - g.askedAt!);
  switch (kind) {
    case 'growth asked':
      return (
        `grow the job from ${g.from} to ${g.to} shards while it trains: ` +
        (g.started.length
          ? `started ${g.started.map((p) => `${p.name} (pid ${p.pid})`).join(', ')}, then `
          : '') +
        `asked ${g.askedOf} for ${g.to} shards`
      );
    case 'growth served': {
      const details = [
        g.handedBackAt !== undefined
          ? `the ${g.from} old ones handed back after ${sinceAsk(g.handedBackAt)}`
          : '',
        g.moved !== undefined ? `${g.moved} of ${g.to} shares copied live` : '',
        g.restoreMs !== undefined
          ? `${g.moved ? 'the others' : 'each share'} restored from their checkpoints in ${g.restoreMs} ms or less`
          : '',
      ].filter(Boolean);
      return (
        `${g.to} shards serve ${sinceAsk(g.servedAt)} after the ask` +
        (details.length ? `: ${details.join(', ')}` : '')
      );
    }
    case 'growth resumed':
      return (
        `every trainer is stepping again: ${sinceAsk(g.resumedAt)} from the ask to training on ${g.to} shards` +
        (g.refusedAt !== undefined
          ? `, ${seconds(g.resumedAt! - g.refusedAt)} after the first shard refused pushes`
          : '')
      );
    case 'growth audited':
      return `acknowledged updates lost across the growth: ${g.audit!.lost} of ${g.audit!.acknowledged} (applied twice: ${g.audit!.doubled})`;
  }
}

/**
 * The growth in the demo's last lines: `grow 3 → 4 shards: serving at 4 after 1.4 s; training
 * resumed after 1.6 s; acknowledged updates lost across it: 0 of 212 (applied twice: 0)`.
 */
export function growthSummary(g: Growth): string {
  const after = (at: number): string => `after ${seconds(at - g.askedAt!)}`;
  return (
    `  grow ${g.from} → ${g.to} shards: ` +
    (g.servedAt !== undefined
      ? `serving at ${g.to} ${after(g.servedAt)}`
      : `not serving at ${g.to}`) +
    (g.resumedAt !== undefined
      ? `; training resumed ${after(g.resumedAt)}` +
        (g.refusedAt !== undefined ? ` (paused ${seconds(g.resumedAt - g.refusedAt)})` : '')
      : '; training did not resume') +
    (g.audit
      ? `; acknowledged updates lost across it: ${g.audit.lost} of ${g.audit.acknowledged} (applied twice: ${g.audit.doubled})`
      : '')
  );
}
