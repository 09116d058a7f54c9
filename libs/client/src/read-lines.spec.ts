import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readLines } from './read-lines';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'read-lines-'));
afterAll(() => fs.rmSync(dir, { recursive: true }));

async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

/** Reads the file as tasks of `taskBytes` and returns every task's lines, in order. */
async function readAsTasks(file: string, taskBytes: number, chunkBytes: number): Promise<string[]> {
  const size = fs.statSync(file).size;
  const all: string[] = [];
  for (let start = 0; start < size; start += taskBytes)
    all.push(
      ...(await collect(readLines(file, start, Math.min(start + taskBytes, size), chunkBytes))),
    );
  return all;
}

/** A small deterministic generator, so failures can be replayed. */
function generator(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return state % n;
  };
}

describe('readLines', () => {
  it('reads every line exactly once across tasks of any size, chunk size and line layout', async () => {
    for (let seed = 1; seed <= 20; seed++) {
      const random = generator(seed);
      const lines = Array.from({ length: 1 + random(30) }, (_, i) =>
        random(5) === 0 ? '' : `${i}:${'é'.repeat(random(3))}${'x'.repeat(random(40))}`,
      );
      const trailingNewline = random(2) === 0;
      const file = path.join(dir, `seed-${seed}.txt`);
      fs.writeFileSync(file, lines.join('\n') + (trailingNewline ? '\n' : ''));
      // Without a trailing newline, a final empty line is no line at all.
      const expected = !trailingNewline && lines.at(-1) === '' ? lines.slice(0, -1) : lines;
      for (const taskBytes of [1, 3, 7, 64, 1_000_000]) {
        for (const chunkBytes of [3, 64 * 1024]) {
          expect(await readAsTasks(file, taskBytes, chunkBytes)).toEqual(expected);
        }
      }
    }
  }, 60_000);

  it('reads the line that begins in the range to its end, and none that begins after', async () => {
    const file = path.join(dir, 'three.txt');
    fs.writeFileSync(file, 'alpha\nbeta\r\ngamma');
    expect(await collect(readLines(file, 0, 1))).toEqual(['alpha']);
    expect(await collect(readLines(file, 1, 6))).toEqual([]);
    expect(await collect(readLines(file, 1, 7))).toEqual(['beta']);
    expect(await collect(readLines(file, 6, 18))).toEqual(['beta', 'gamma']);
  });
});
