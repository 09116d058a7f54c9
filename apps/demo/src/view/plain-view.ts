import {
  clock,
  formatNumber,
  masterLine,
  shardLine,
  type DemoSnapshot,
  type DemoView,
} from './demo-view';

/** The demo as plain lines (CI, pipes): the story, and a progress line every tenth of the run. */
export class PlainView implements DemoView {
  private nextTenth = 1;
  private startedAt = Date.now();

  constructor(private readonly write: (line: string) => void = (line) => console.log(line)) {}

  note(text: string, at: number): void {
    this.write(`[${clock(at, this.startedAt)}] ${text}`);
  }

  render(snapshot: DemoSnapshot): void {
    this.startedAt = snapshot.startedAt;
    const { progress, now } = snapshot;
    const fraction = progress.fraction();
    if (fraction * 10 < this.nextTenth) return;
    this.nextTenth = Math.floor(fraction * 10) + 1;
    const pass = progress.currentPass();
    this.note(
      `${Math.round(fraction * 100)} % · pass ${pass + 1}/${progress.passes} · loss ` +
        `${progress.loss?.toFixed(3) ?? '-'} · ${formatNumber(progress.samplesPerSecond(now))} samples/s` +
        ` · shards ${shardLine(snapshot)} · masters ${masterLine(snapshot)}`,
      now,
    );
  }

  close(): void {
    // Lines need no cleanup.
  }
}
