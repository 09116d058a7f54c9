import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { workspaceRoot } from '@pserver/local-cluster';
import { count } from '../cli-options';

/** The languages the demo has a trainer in; all print the same JSON event lines. */
export type TrainerLanguage = 'typescript' | 'python' | 'go';

export interface TrainerSpec {
  name: string;
  language: TrainerLanguage;
}

/** Names the trainers: `trainer-<k>` in TypeScript, `python-<k>` and `go-<k>` for the others. */
export function trainerLineup(counts: Record<TrainerLanguage, number>): TrainerSpec[] {
  const prefix: Record<TrainerLanguage, string> = {
    typescript: 'trainer',
    python: 'python',
    go: 'go',
  };
  return (Object.keys(prefix) as TrainerLanguage[]).flatMap((language) =>
    Array.from({ length: counts[language] }, (_, k) => ({
      name: `${prefix[language]}-${k}`,
      language,
    })),
  );
}

/** How many trainers of each language the demo's commands start (`--trainers`, …). */
export interface TrainerCounts {
  trainers: number;
  pythonTrainers: number;
  goTrainers: number;
}

/** Adds the flags of `TrainerCounts` to a command. */
export function withTrainerOptions(command: Command): Command {
  return command
    .option('--trainers <n>', 'TypeScript trainer processes', count, 4)
    .option('--python-trainers <n>', 'Python trainers (examples/python)', count, 0)
    .option('--go-trainers <n>', 'Go trainers (examples/go; build first)', count, 0);
}

/** The trainers those flags ask for. */
export function lineupOf(counts: TrainerCounts): TrainerSpec[] {
  return trainerLineup({
    typescript: counts.trainers,
    python: counts.pythonTrainers,
    go: counts.goTrainers,
  });
}

/** Debian's Python, the one with python3-grpcio and python3-torch (`command -pv python3`). */
export function systemPython(): string {
  return execFileSync('sh', ['-c', 'command -pv python3'], { encoding: 'utf8' }).trim();
}

/**
 * How to start a trainer of `language`: the TypeScript bundle next to this one, the Python
 * example with Debian's interpreter (the one with python3-grpcio; `command -pv python3`), the Go
 * example's binary. A program that is not there yet is an error that says how to build it.
 */
export function trainerProgram(language: TrainerLanguage): {
  command: string;
  args: string[];
  env?: Record<string, string>;
} {
  const root = workspaceRoot();
  const required = (file: string, build: string): string => {
    if (!fs.existsSync(file)) throw new Error(`${file} is missing: ${build}`);
    return file;
  };
  switch (language) {
    case 'typescript':
      return { command: process.execPath, args: [path.join(__dirname, 'trainer.js')] };
    case 'python':
      return {
        command: systemPython(),
        args: [
          required(
            path.join(root, 'examples', 'python', 'digits_trainer.py'),
            'check out the repository whole',
          ),
        ],
        env: { PYTHONPATH: path.join(root, 'clients', 'python') },
      };
    case 'go':
      return {
        command: required(
          path.join(root, 'dist', 'examples', 'go', 'digits-trainer', 'digits-trainer'),
          "build it with 'npx nx run client-go:build'",
        ),
        args: [],
      };
  }
}
