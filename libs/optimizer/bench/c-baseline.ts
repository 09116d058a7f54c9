/**
 * The C baseline of the optimizer bench: kernels.c built with the machine's gcc, twice (plain
 * `-O3 -march=native`, and with `-fno-math-errno`, which lets gcc vectorize sqrtf), and run for
 * the same element counts and passes as the WebAssembly rows.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The C kernels, by the names kernels.c prints. */
export type CKernel = 'sgd' | 'momentum' | 'adagrad' | 'adam';

export interface CTiming {
  secondsBest: number;
  secondsMedian: number;
}

export interface CBuild {
  /** The flags it was compiled with. */
  readonly flags: string;
  /** Times of a pass of `calls` calls of `kernel` over `elements` elements. */
  run(kernel: CKernel, elements: number, calls: number, passes: number): CTiming;
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

/** kernels.c's line "<name> <best seconds> <median seconds>". */
function parse(output: string): CTiming {
  const [, best, median] = output.trim().split(' ');
  return { secondsBest: Number(best), secondsMedian: Number(median) };
}
