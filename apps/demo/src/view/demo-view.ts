import type { TrainingProgress } from '../run/training-progress';

/** What the demo shows at one moment. */
export interface DemoSnapshot {
  now: number;
  startedAt: number;
  progress: TrainingProgress;
  /**
   * Which pserver serves each shard, at which lease epoch; `restored` when it came from its
   * checkpoint, `reshapedFrom` when from the checkpoints of that many shards (the job grew).
   */
  shards: {
    index: number;
    name: string;
    epoch: number;
    restored: boolean;
    reshapedFrom?: number;
  }[];
  masters: { name: string; state: 'leading' | 'standby' | 'killed' }[];
}

/** Where the demo tells its story: a live terminal view, or plain lines for logs and CI. */
export interface DemoView {
  /** One line of the story: a process started, a kill, a takeover, a pass over. */
  note(text: string, at: number): void;
  render(snapshot: DemoSnapshot): void;
  close(): void;
}

export const formatNumber = (n: number): string => Math.round(n).toLocaleString('en-US');

/** `  12.3 s` since the start. */
export const clock = (at: number, startedAt: number): string =>
  `${((at - startedAt) / 1000).toFixed(1).padStart(6)} s`;

export function shardLine(snapshot: Pick<DemoSnapshot, 'shards'>): string {
  return snapshot.shards
    .map(
      (s) =>
        `${s.index}: ${s.name} lease epoch ${s.epoch}` +
        (s.restored ? ' (restored)' : s.reshapedFrom ? ` (from ${s.reshapedFrom} shards)` : ''),
    )
    .join(' · ');
}

export function masterLine(snapshot: DemoSnapshot): string {
  return snapshot.masters.map((m) => `${m.name} ${m.state}`).join(' · ');
}
