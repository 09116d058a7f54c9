import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fromCsvLine, loadDigits, splitDigits, toCsvLine, writeCsvFiles } from './digits';

describe('the digits', () => {
  const digits = loadDigits();

  it('are the 10,000 MNIST digits of the package, every class present', () => {
    expect(digits).toHaveLength(10_000);
    const perClass = new Map<number, number>();
    for (const { label, pixels } of digits) {
      perClass.set(label, (perClass.get(label) ?? 0) + 1);
      expect(pixels).toHaveLength(784);
    }
    expect([...perClass.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const count of perClass.values()) expect(count).toBeGreaterThan(800);
  });

  it('split the same way for the same seed, differently for another, never overlapping', () => {
    const a = splitDigits(digits, 2000, 7);
    const b = splitDigits(digits, 2000, 7);
    const c = splitDigits(digits, 2000, 8);
    expect(a.test).toHaveLength(2000);
    expect(a.train).toHaveLength(8000);
    expect(a.test).toEqual(b.test);
    expect(c.test).not.toEqual(a.test);
    const inTest = new Set(a.test);
    expect(a.train.some((s) => inTest.has(s))).toBe(false);
  });

  it('survive a round trip through CSV files, and a malformed line is refused by name', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'digits-'));
    const sample = digits.slice(0, 5);
    const files = writeCsvFiles(dir, sample, 2);
    const lines = files.flatMap((f) => fs.readFileSync(f, 'utf8').trimEnd().split('\n'));
    expect(lines).toEqual(sample.map(toCsvLine));
    const back = lines.map(fromCsvLine);
    back.forEach((s, i) => {
      expect(s.label).toBe(sample[i]!.label);
      s.pixels.forEach((p, k) => expect(p).toBeCloseTo(sample[i]!.pixels[k]!, 2));
    });
    expect(() => fromCsvLine('3,1,2')).toThrow('785 fields, this one 3');
    expect(() => fromCsvLine(`x${toCsvLine(sample[0]!).slice(1)}`)).toThrow("not 'x");
    fs.rmSync(dir, { recursive: true });
  });
});
