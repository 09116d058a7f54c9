/**
 * The tables of a data-plane run: per server and phase, min / median / max of the throughput,
 * the median CPU the server (and the driver) used, the server's throughput per core-second, and
 * the pserver's ratios to the reference servers.
 */
import { type ServerName } from './servers';

export const phaseNames = ['push', 'stream', 'pull', 'small'] as const;
export type PhaseName = (typeof phaseNames)[number];

/** One phase as driver.py reports it. */
export interface PhaseFigures {
  calls: number;
  bytes: number;
  seconds: number;
  gbps: number;
  calls_per_s: number;
  driver_cores: number;
  server_cpu_s?: number;
  server_cores?: number;
  /** The machine's busy cores less the server's and the driver's: others' load, noise. */
  other_cores?: number;
}

/** One line of the run's JSONL file: one server, one round. */
export interface RunRecord {
  date: string;
  round: number;
  server: ServerName;
  tls: boolean;
  /** The driver exited 0: every push applied, every value checked. */
  ok: boolean;
  exitCode: number | null;
  loadavg1Before: number;
  error?: string;
  phases?: Record<PhaseName, PhaseFigures>;
}

/** Bytes moved are the byte phases' figure; the small phase counts calls. */
const countsCalls = (phase: PhaseName): boolean => phase === 'small';

function throughput(phase: PhaseName, f: PhaseFigures): number {
  return countsCalls(phase) ? f.calls_per_s : f.gbps;
}

/** GB (small: calls) per CPU-second of the server. */
function perServerCoreSecond(phase: PhaseName, f: PhaseFigures): number {
  if (!f.server_cpu_s) return Number.NaN;
  return (countsCalls(phase) ? f.calls : f.bytes / 1e9) / f.server_cpu_s;
}

function median(values: number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function format(value: number, digits: number): string {
  return Number.isNaN(value) ? '–' : value.toFixed(digits);
}

const digitsOf = (phase: PhaseName): number => (countsCalls(phase) ? 0 : 3);

/** A Markdown table with padded columns. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** Every table of the run, from its successful records. */
export function summarize(records: RunRecord[], servers: readonly ServerName[]): string {
  const figures = (server: ServerName, phase: PhaseName): PhaseFigures[] =>
    records.filter((r) => r.ok && r.server === server && r.phases).map((r) => r.phases![phase]);
  const present = servers.filter((s) => figures(s, 'push').length > 0);
  const runs = (server: ServerName): number => figures(server, 'push').length;
  const phaseHeader = phaseNames.map((p) => (countsCalls(p) ? `${p} calls/s` : `${p} GB/s`));

  const rates = table(
    ['server', 'runs', ...phaseHeader],
    present.map((server) => [
      server,
      String(runs(server)),
      ...phaseNames.map((phase) => {
        const values = figures(server, phase).map((f) => throughput(phase, f));
        const d = digitsOf(phase);
        return `${format(Math.min(...values), d)} / **${format(median(values), d)}** / ${format(Math.max(...values), d)}`;
      }),
    ]),
  );
  const cores = table(
    ['server', ...phaseNames],
    present.map((server) => [
      server,
      ...phaseNames.map((phase) => {
        const measured = figures(server, phase);
        const medianCores = (of: (f: PhaseFigures) => number | undefined): string =>
          format(median(measured.map((f) => of(f) ?? Number.NaN)), 2);
        const [own, driver, others] = [
          medianCores((f) => f.server_cores),
          medianCores((f) => f.driver_cores),
          medianCores((f) => f.other_cores),
        ];
        return `${own} (${driver}, ${others})`;
      }),
    ]),
  );
  const efficiency = table(
    ['server', ...phaseNames.map((p) => (countsCalls(p) ? `${p} calls` : `${p} GB`))],
    present.map((server) => [
      server,
      ...phaseNames.map((phase) =>
        format(
          median(figures(server, phase).map((f) => perServerCoreSecond(phase, f))),
          digitsOf(phase),
        ),
      ),
    ]),
  );
  const medianOf = (server: ServerName, phase: PhaseName, of: typeof throughput): number =>
    median(figures(server, phase).map((f) => of(phase, f)));
  // The pserver over each reference server measured: throughput, then throughput per core-second.
  const references = (['go', 'python'] as const).filter((s) => present.includes(s));
  const showRatios = present.includes('pserver') && references.length > 0;
  const ratio = (reference: ServerName, phase: PhaseName, of: typeof throughput): string =>
    format(medianOf('pserver', phase, of) / medianOf(reference, phase, of), 2);
  const ratios = table(
    [
      'phase',
      ...references.map((r) => `pserver/${r}`),
      ...references.map((r) => `per core-s: pserver/${r}`),
    ],
    phaseNames.map((phase) => [
      phase,
      ...references.map((r) => ratio(r, phase, throughput)),
      ...references.map((r) => ratio(r, phase, perServerCoreSecond)),
    ]),
  );
  return [
    'Throughput, min / **median** / max over the runs (GB = 1e9 bytes of tensor payload; small: calls/s)',
    rates,
    '',
    'CPU, median cores busy during each phase: server (driver, others)',
    cores,
    '',
    'Server efficiency, median per server core-second: GB moved (small: calls)',
    efficiency,
    ...(showRatios
      ? ['', 'Ratios of medians: throughput, and throughput per server core-second', ratios]
      : []),
  ].join('\n');
}
