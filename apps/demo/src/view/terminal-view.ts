import { MultiBar, type GenericFormatter, type SingleBar } from 'cli-progress';
import {
  clock,
  formatNumber,
  masterLine,
  shardLine,
  type DemoSnapshot,
  type DemoView,
} from './demo-view';

const barWidth = 28;

/** A bar line: `label  ██████░░░░  text`, or only `label  text` for a line without a bar. */
const line: GenericFormatter = (
  options,
  params,
  payload: { label: string; text: string; bar: boolean },
) => {
  const filled = Math.round(Math.min(1, params.progress) * barWidth);
  const bar = payload.bar ? `${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}  ` : '';
  return `${payload.label.padEnd(11)} ${bar}${payload.text}`;
};

/**
 * The live view on a terminal: a bar for the pass and one per trainer (its share of the pass),
 * the loss and samples per second, which pserver serves each shard at which lease epoch, and the
 * masters; the story's lines scroll above it.
 */
export class TerminalView implements DemoView {
  private readonly bars: MultiBar;
  private readonly pass: SingleBar;
  private readonly trainers = new Map<string, SingleBar>();
  private readonly shards: SingleBar;
  private readonly masters: SingleBar;
  private startedAt = Date.now();

  constructor(trainers: string[], samplesPerPass: number) {
    this.bars = new MultiBar({
      format: line,
      hideCursor: true,
      gracefulExit: false,
      clearOnComplete: false,
      autopadding: true,
      fps: 10,
      // Every line every frame: a story line scrolls the block, and a line left as it was would
      // then show what the line above it said.
      forceRedraw: true,
    });
    // Each bar keeps (and updates) its own payload object.
    const payload = (label: string, bar: boolean): object => ({ label, text: '', bar });
    this.pass = this.bars.create(samplesPerPass, 0, payload('pass', true));
    for (const name of trainers)
      this.trainers.set(name, this.bars.create(samplesPerPass, 0, payload(name, true)));
    this.shards = this.bars.create(1, 0, payload('shards', false));
    this.masters = this.bars.create(1, 0, payload('masters', false));
  }

  note(text: string, at: number): void {
    // Cleared to the end of the row: the line may be written over a longer bar line.
    this.bars.log(`[${clock(at, this.startedAt)}] ${text}\x1b[0K\n`);
  }

  render(snapshot: DemoSnapshot): void {
    this.startedAt = snapshot.startedAt;
    const { progress, now } = snapshot;
    const pass = progress.currentPass();
    this.pass.update(progress.samplesIn(pass), {
      label: `pass ${pass + 1}/${progress.passes}`,
      text:
        `${formatNumber(progress.samplesIn(pass))}/${formatNumber(progress.samplesPerPass)}` +
        `  loss ${progress.loss?.toFixed(3) ?? '-'}  ${formatNumber(progress.samplesPerSecond(now))} samples/s` +
        `  ${clock(now, snapshot.startedAt).trim()}`,
      bar: true,
    });
    for (const [name, bar] of this.trainers) {
      const trainer = progress.trainers.get(name)!;
      bar.update(trainer.samplesByPass[trainer.pass] ?? 0, {
        label: name,
        text:
          trainer.phase === 'training'
            ? `step ${trainer.steps}  loss ${trainer.lastLoss?.toFixed(3) ?? '-'}  ` +
              `${formatNumber(progress.samplesPerSecond(now, name))} samples/s`
            : trainer.phase,
        bar: true,
      });
    }
    this.shards.update(0, { label: 'shards', text: shardLine(snapshot), bar: false });
    this.masters.update(0, { label: 'masters', text: masterLine(snapshot), bar: false });
  }

  close(): void {
    this.bars.stop();
  }
}
