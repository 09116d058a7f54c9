/**
 * The C baseline of the optimizer bench: kernels.c built with the machine's gcc (plain
 * `-O3 -march=native`; with `-fno-math-errno`, which lets gcc vectorize sqrtf; and that limited to
 * 128-bit vectors, WebAssembly's width, to show what the width accounts for), and run for the same
 * element counts and passes as the WebAssembly rows.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The C kernels, by the names kernels.c prints. */
export type CKernel = 'sgd' | 'momentum' | 'adagrad' | 'adam';

export interface CBuild {
  /** The flags it was compiled with. */
  readonly flags: string;
  /** Whether it is a baseline (else it only shows what 128-bit vectors give). */
  readonly baseline: boolean;
  /** The seconds of each pass of `calls` calls of `kernel` over `elements` elements. */
  run(kernel: CKernel, elements: number, calls: number, passes: number): number[];
}

export interface CBaseline {
  /** gcc's first line of `--version`. */
  readonly compiler: string;
  readonly builds: readonly CBuild[];
  /** Deletes the binaries. */
  close(): void;
}

const variants = [
  ['-O3', '-march=native'],
  ['-O3', '-march=native', '-fno-math-errno'],
  ['-O3', '-march=native', '-fno-math-errno', '-mprefer-vector-width=128'],
];

/** Compiles `source` with gcc; a string saying why not when gcc is missing or fails. */
export function buildCBaseline(source: string): CBaseline | string {
  let compiler: string;
  try {
    compiler = execFileSync('gcc', ['--version'], { encoding: 'utf8' }).split('\n')[0]!;
  } catch {
    return 'gcc not found: no C baseline, WebAssembly figures only';
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'optimizer-bench-'));
  try {
    const builds = variants.map((flags, i): CBuild => {
      const binary = path.join(dir, `kernels-${i}`);
      execFileSync('gcc', [...flags, '-o', binary, source, '-lm'], { stdio: 'pipe' });
      return {
        flags: flags.join(' '),
        baseline: !flags.includes('-mprefer-vector-width=128'),
        run: (kernel, elements, calls, passes) =>
          parse(
            execFileSync(binary, [String(elements), String(calls), String(passes), kernel], {
              encoding: 'utf8',
            }),
          ),
      };
    });
    return { compiler, builds, close: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    return `gcc failed (${stderr || (err as Error).message}): no C baseline, WebAssembly figures only`;
  }
}

/** kernels.c's line: the kernel's name, then the seconds of each pass. */
function parse(output: string): number[] {
  return output.trim().split(' ').slice(1).map(Number);
}
