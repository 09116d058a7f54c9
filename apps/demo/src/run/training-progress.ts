/** One training step as a trainer reported it. */
export interface StepRecord {
  trainer: string;
  pass: number;
  loss: number;
  samples: number;
  /** When the trainer began the step, and when it was applied (ms since the epoch). */
  started: number;
  t: number;
}

export type TrainerPhase = 'starting' | 'training' | 'done' | 'failed';

export interface TrainerState {
  name: string;
  phase: TrainerPhase;
  /** The pass it works on (the last one when done). */
  pass: number;
  /** Samples it trained on, by pass. */
  samplesByPass: number[];
  steps: number;
  lastLoss: number | undefined;
  error?: string;
}

/**
 * What the trainers have done, from the JSON lines they print: steps with their loss, samples per
 * pass, who is done. The demo's view, chaos schedule and report all read from here.
 */
export class TrainingProgress {
  readonly steps: StepRecord[] = [];
  readonly trainers = new Map<string, TrainerState>();
  private smoothed: number | undefined;

  constructor(
    names: string[],
    readonly passes: number,
    readonly samplesPerPass: number,
  ) {
    for (const name of names)
      this.trainers.set(name, {
        name,
        phase: 'starting',
        pass: 0,
        samplesByPass: Array.from({ length: passes }, () => 0),
        steps: 0,
        lastLoss: undefined,
      });
  }

  /** Takes one line of a trainer's output; lines that are not its events are ignored. */
  onTrainerLine(name: string, line: string): void {
    const trainer = this.trainers.get(name);
    if (!trainer || !line.startsWith('{')) return;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const number = (key: string): number => Number(event[key]);
    switch (event.event) {
      case 'ready':
        trainer.phase = 'training';
        break;
      case 'step': {
        const step: StepRecord = {
          trainer: name,
          pass: number('pass'),
          loss: number('loss'),
          samples: number('samples'),
          started: number('started'),
          t: number('t'),
        };
        this.steps.push(step);
        trainer.pass = step.pass;
        trainer.samplesByPass[step.pass] = (trainer.samplesByPass[step.pass] ?? 0) + step.samples;
        trainer.steps++;
        trainer.lastLoss = step.loss;
        // An exponential average over the last few dozen steps of every trainer.
        this.smoothed =
          this.smoothed === undefined ? step.loss : 0.95 * this.smoothed + 0.05 * step.loss;
        break;
      }
      case 'pass over':
        trainer.pass = Math.min(number('pass') + 1, this.passes - 1);
        break;
      case 'done':
        trainer.phase = 'done';
        break;
      case 'failed':
        trainer.phase = 'failed';
        trainer.error = String(event.error);
        break;
    }
  }

  /** The smoothed loss of recent steps. */
  get loss(): number | undefined {
    return this.smoothed;
  }

  /** Samples trained on in `pass`, all trainers together. */
  samplesIn(pass: number): number {
    let sum = 0;
    for (const t of this.trainers.values()) sum += t.samplesByPass[pass] ?? 0;
    return sum;
  }

  /** The share of the whole run done, in [0, 1]. */
  fraction(): number {
    let sum = 0;
    for (let pass = 0; pass < this.passes; pass++) sum += this.samplesIn(pass);
    return Math.min(1, sum / (this.passes * this.samplesPerPass));
  }

  /** The pass most trainers are in: the lowest pass a trainer still works on. */
  currentPass(): number {
    const working = [...this.trainers.values()].filter((t) => t.phase !== 'done');
    return working.length === 0 ? this.passes - 1 : Math.min(...working.map((t) => t.pass));
  }

  /** Samples per second over the last `windowMs` before `now`, of one trainer or all. */
  samplesPerSecond(now: number, trainer?: string, windowMs = 3_000): number {
    let sum = 0;
    for (let i = this.steps.length - 1; i >= 0; i--) {
      const step = this.steps[i]!;
      if (step.t < now - windowMs) break;
      if (trainer === undefined || step.trainer === trainer) sum += step.samples;
    }
    return (sum * 1000) / windowMs;
  }

  /**
   * When every trainer that kept training after `since` had completed a step at or after `since`
   * (the latest of their first such steps): with `since` the takeover after a failure, the
   * moment training was whole again. Undefined until then.
   */
  resumedAfter(since: number): number | undefined {
    let resumed = since;
    for (const trainer of this.trainers.values()) {
      const step = this.steps.find((s) => s.trainer === trainer.name && s.t >= since);
      if (step) resumed = Math.max(resumed, step.t);
      else if (trainer.phase !== 'done') return undefined;
    }
    return resumed;
  }

  /**
   * The longest time no trainer applied a step, between the first step and the last: a pass that
   * waits for an orphaned task's timeout shows here even when every failure "resumed".
   */
  longestPause(): { ms: number; from: number } | undefined {
    const times = this.steps.map((s) => s.t).sort((a, b) => a - b);
    let longest: { ms: number; from: number } | undefined;
    for (let i = 1; i < times.length; i++) {
      const ms = times[i]! - times[i - 1]!;
      if (!longest || ms > longest.ms) longest = { ms, from: times[i - 1]! };
    }
    return longest;
  }

  allFinished(): boolean {
    return [...this.trainers.values()].every((t) => t.phase === 'done' || t.phase === 'failed');
  }
}
