import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { RowOptimizerConfigInput } from './row-config';
import { RowOptimizer } from './row-optimizer';

interface GoldenCase {
  name: string;
  config: RowOptimizerConfigInput;
  dim: number;
  rows: number;
  /** Float32 bits as hex, space-separated: the rows' initial values. */
  values: string;
  /** The whole table before the first step: each row [values | initial state]. */
  initial: string;
  steps: { step: number; rows: number[]; grads: string; expected: string }[];
}

// Computed by test-support/generate_row_golden.py (numpy float32), independently of these rules.
const supportDir = path.join(__dirname, '..', '..', 'test-support');
const goldenPath = path.join(supportDir, 'row-golden.json');
const golden = JSON.parse(fs.readFileSync(goldenPath, 'utf8')) as { cases: GoldenCase[] };

function fromHex(hex: string): Float32Array {
  const words = hex === '' ? [] : hex.split(' ');
  return new Float32Array(Uint32Array.from(words, (w) => parseInt(w, 16)).buffer);
}

function toHex(values: Float32Array): string {
  return Array.from(new Uint32Array(values.buffer, values.byteOffset, values.length), (w) =>
    w.toString(16).padStart(8, '0'),
  ).join(' ');
}

describe('row optimizers against the golden vectors (test-support/row-golden.json)', () => {
  it('covers every row layout at dims 4 and 7', () => {
    const layouts = new Set(golden.cases.map((c) => new RowOptimizer(c.config, c.dim).layout.name));
    expect([...layouts].sort()).toEqual([
      'adagrad',
      'adam-row',
      'adam-table',
      'rowwise-adagrad',
      'sgd',
    ]);
    expect(new Set(golden.cases.map((c) => c.dim))).toEqual(new Set([4, 7]));
  });

  it.each(golden.cases.map((c) => [c.name, c] as const))(
    '%s: the same bits after every step',
    (_name, c) => {
      const optimizer = new RowOptimizer(c.config, c.dim);
      const { stride } = optimizer.layout;
      const data = new Float32Array(c.rows * stride);
      const values = fromHex(c.values);
      for (let r = 0; r < c.rows; r++) {
        data.set(values.subarray(r * c.dim, (r + 1) * c.dim), r * stride);
        optimizer.initializeRow(data, r);
      }
      expect(toHex(data)).toBe(c.initial);
      for (const step of c.steps) {
        optimizer.update(data, Int32Array.from(step.rows), fromHex(step.grads), step.step);
        expect({ step: step.step, table: toHex(data) }).toEqual({
          step: step.step,
          table: step.expected,
        });
      }
    },
  );
});

// Debian's interpreter with python3-numpy, which `npm test`'s setup installs; another python3
// may come first on PATH.
const python = '/usr/bin/python3';

describe('test-support/row-golden.json', () => {
  it('is what generate_row_golden.py writes (rerun it after a change)', () => {
    const run = spawnSync(python, [path.join(supportDir, 'generate_row_golden.py')], {
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(fs.readFileSync(goldenPath, 'utf8'));
  });
});
