import type { Failure } from '../run/chaos';
import type { Growth } from '../run/live-growth';
import type { StepRecord } from '../run/training-progress';
import { niceTicks, tickLabel } from './nice-ticks';

export interface ReportData {
  title: string;
  /** Settings shown under the title, e.g. `{ pservers: 3, trainers: 4 }`. */
  settings: Record<string, string | number | boolean>;
  startedAt: number;
  finishedAt: number;
  steps: readonly StepRecord[];
  failures: readonly Failure[];
  /** The job grown by a shard while it trained, when it was. */
  growth?: Growth;
  /** Acknowledged updates the audit found lost and applied twice, when the run was audited. */
  audit?: { acknowledged: number; lost: number; doubled: number };
  /** The result in one phrase, HTML: `test accuracy <b>91.2 %</b>`. */
  headline: string;
  /** What the trainers' loss is, for its axis. */
  lossLabel: string;
  /** More charts, after loss and throughput. */
  curves?: readonly Curve[];
}

/** A quantity measured now and then during the run, such as the held-out AUC. */
export interface Curve {
  title: string;
  caption?: string;
  yLabel: string;
  /** (when, ms since the epoch; value). */
  points: readonly [t: number, y: number][];
  /** A level to compare with, drawn dashed across the chart (e.g. the best achievable). */
  reference?: { value: number; label: string };
}

interface Series {
  points: [x: number, y: number][];
  style: 'dots' | 'line' | 'dashed';
  color: string;
  /** Written at the line's right end. */
  label?: string;
}

const width = 900;
const height = 260;
const margin = { left: 60, right: 20, top: 20, bottom: 36 };

const escape = (text: string): string =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** A stretch of the run marked on every chart: from a kill or the ask to grow until resumed. */
interface Span {
  /** ms since the epoch. */
  from: number;
  to: number;
  label: string;
  color: string;
}

/** The spans of the run's chaos: red for each kill, blue for the growth. */
function spansOf(failures: readonly Failure[], growth: Growth | undefined): Span[] {
  const spans = failures.map((f) => ({
    from: f.killedAt,
    to: f.resumedAt ?? f.killedAt,
    label: `kill -9 ${f.victim}`,
    color: '#d33',
  }));
  if (growth?.askedAt !== undefined)
    spans.push({
      from: growth.askedAt,
      to: growth.resumedAt ?? growth.askedAt,
      label: `${growth.from} → ${growth.to} shards`,
      color: '#36c',
    });
  return spans.sort((a, b) => a.from - b.from);
}

/** One chart: x is seconds since the start; the chaos is drawn as marked spans. */
function chart(
  series: Series[],
  yLabel: string,
  spans: readonly Span[],
  t0: number,
  x1: number,
): string {
  const ys = series.flatMap((s) => s.points.map(([, y]) => y));
  // The y axis runs to the round tick at or above the highest point; the x axis is the run.
  const yTicks = niceTicks(Math.max(...ys, 0), 4);
  const yMax = Math.max(1e-9, yTicks.at(-1)!);
  const sx = (x: number): number => margin.left + (x / x1) * (width - margin.left - margin.right);
  const sy = (y: number): number =>
    height - margin.bottom - (y / yMax) * (height - margin.top - margin.bottom);
  const parts: string[] = [];
  for (const y of yTicks)
    parts.push(
      `<line x1="${margin.left}" x2="${width - margin.right}" y1="${sy(y)}" y2="${sy(y)}" stroke="#eee"/>`,
      `<text x="${margin.left - 6}" y="${sy(y) + 4}" text-anchor="end">${tickLabel(y)}</text>`,
    );
  for (const x of niceTicks(x1, 6).filter((x) => x <= x1))
    parts.push(
      `<text x="${sx(x)}" y="${height - margin.bottom + 16}" text-anchor="middle">${tickLabel(x)} s</text>`,
    );
  for (const span of spans) {
    const from = (span.from - t0) / 1000;
    const to = (span.to - t0) / 1000;
    parts.push(
      `<rect x="${sx(from)}" y="${margin.top}" width="${Math.max(1, sx(to) - sx(from))}" height="${height - margin.top - margin.bottom}" fill="${span.color}" opacity="0.12"/>`,
      `<line x1="${sx(from)}" x2="${sx(from)}" y1="${margin.top}" y2="${height - margin.bottom}" stroke="${span.color}" stroke-dasharray="4 3"/>`,
      `<text x="${sx(from) + 4}" y="${margin.top + 12}" fill="${span.color}">${escape(span.label)}</text>`,
    );
  }
  for (const s of series) {
    if (s.style === 'dots')
      for (const [x, y] of s.points)
        parts.push(
          `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="1.5" fill="${s.color}" opacity="0.35"/>`,
        );
    else
      parts.push(
        `<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.style === 'dashed' ? ' stroke-dasharray="6 4"' : ''} points="${s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ')}"/>`,
      );
    const end = s.points.at(-1);
    if (s.label && end)
      parts.push(
        `<text x="${sx(end[0]) - 4}" y="${sy(end[1]) - 5}" text-anchor="end" fill="${s.color}">${escape(s.label)}</text>`,
      );
  }
  parts.push(
    `<text x="14" y="${height / 2}" transform="rotate(-90 14 ${height / 2})" text-anchor="middle">${escape(yLabel)}</text>`,
  );
  return `<svg viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${parts.join('')}</svg>`;
}

/** A moving average of `values` over `window` points. */
function movingAverage(points: [number, number][], window: number): [number, number][] {
  let sum = 0;
  return points.map(([x, y], i) => {
    sum += y - (i >= window ? points[i - window]![1] : 0);
    return [x, sum / Math.min(i + 1, window)];
  });
}

/** A curve's chart: its points as a line with dots, and its reference level dashed. */
function curveChart(curve: Curve, spans: readonly Span[], t0: number, x1: number): string {
  const points = curve.points.map(([t, y]): [number, number] => [(t - t0) / 1000, y]);
  const series: Series[] = [
    { points, style: 'line', color: '#36c' },
    { points, style: 'dots', color: '#124' },
  ];
  if (curve.reference)
    series.push({
      points: [
        [0, curve.reference.value],
        [x1, curve.reference.value],
      ],
      style: 'dashed',
      color: '#2a7',
      label: curve.reference.label,
    });
  return `<h2>${escape(curve.title)}</h2>
${curve.caption ? `<p>${escape(curve.caption)}</p>\n` : ''}${chart(series, curve.yLabel, spans, t0, x1)}`;
}

/** The report of a demo run: one self-contained HTML page (no scripts, no network). */
export function renderReport(data: ReportData): string {
  const t0 = data.startedAt;
  const x1 = Math.max(1, (data.finishedAt - t0) / 1000);
  const spans = spansOf(data.failures, data.growth);
  const steps = [...data.steps].sort((a, b) => a.t - b.t);
  const loss: [number, number][] = steps.map((s) => [(s.t - t0) / 1000, s.loss]);
  const perSecond = new Map<number, number>();
  for (const s of steps) {
    const second = Math.floor((s.t - t0) / 1000);
    perSecond.set(second, (perSecond.get(second) ?? 0) + s.samples);
  }
  const throughput: [number, number][] = Array.from({ length: Math.ceil(x1) }, (_, k) => [
    k + 0.5,
    perSecond.get(k) ?? 0,
  ]);
  const rows = data.failures.map(
    (f) =>
      `<tr><td>${seconds(f.killedAt - t0)}</td><td>kill -9 ${escape(f.victim)}${f.index === undefined ? ' (leader)' : ` (shard ${f.index}, lease epoch ${f.epochBefore})`}</td>` +
      `<td>${f.takenOverAt ? `${escape(f.takenOverBy ?? '')} after ${seconds(f.takenOverAt - f.killedAt)}${f.epochAfter ? `, lease epoch ${f.epochAfter}` : ''}${f.restoredUpdates !== undefined ? `, restored ${f.restoredUpdates} updates in ${f.restoreMs} ms` : ''}${f.promoted ? ', its replica promoted (nothing restored)' : ''}` : 'no'}</td>` +
      `<td>${f.resumedAt ? seconds(f.resumedAt - f.killedAt) : 'never'}</td></tr>`,
  );
  const settings = Object.entries(data.settings)
    .map(([k, v]) => `${escape(k)} ${escape(String(v))}`)
    .join(' · ');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${escape(data.title)}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}svg{font-size:11px}table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}</style>
</head><body>
<h1>${escape(data.title)}</h1>
<p>${settings} · ${steps.length} steps in ${seconds(data.finishedAt - t0)} · ${data.headline}</p>
<h2>Loss</h2>
<p>Each dot is one step of one trainer; the line is the average of the last 25 steps. Red: from a kill until every trainer had completed a step after the takeover. Blue: from the ask to grow the job by a shard until every trainer had completed a step at the new count.</p>
${chart(
  [
    { points: loss, style: 'dots', color: '#36c' },
    { points: movingAverage(loss, 25), style: 'line', color: '#124' },
  ],
  data.lossLabel,
  spans,
  t0,
  x1,
)}
<h2>Throughput</h2>
${chart([{ points: throughput, style: 'line', color: '#2a7' }], 'samples/s', spans, t0, x1)}
${(data.curves ?? []).map((c) => curveChart(c, spans, t0, x1)).join('\n')}
${data.growth ? growthSection(data.growth, t0) : ''}
<h2>Failures</h2>
<table><tr><th>at</th><th>what</th><th>taken over by</th><th>time lost</th></tr>${rows.join('') || `<tr><td colspan="4">none${data.growth ? '' : ' (run without chaos)'}</td></tr>`}</table>
${data.audit ? auditSection(data.audit, data.settings.replicas, data.growth !== undefined) : ''}
</body></html>
`;
}

/** The growth: when it was asked, and how long each stage took from the ask. */
function growthSection(g: Growth, t0: number): string {
  const after = (at: number | undefined): string =>
    at !== undefined && g.askedAt !== undefined ? seconds(at - g.askedAt) : 'never';
  const audit = g.audit
    ? `<b>${g.audit.lost}</b> of ${g.audit.acknowledged} lost · ${g.audit.doubled} applied twice`
    : 'not audited';
  return `<h2>Live growth: ${g.from} → ${g.to} shards</h2>
<p>While the trainers trained, the demo started ${g.started.length ? escape(g.started.map((p) => p.name).join(', ')) : 'no pserver'} (so that, with a pserver for every copy of the ${g.to} shards, one is left as a spare for a failover) and asked the leading master for ${g.to} shards: the receiver of each new shard copied its slices from every primary while they served, and applied their pushes as they came; then the primaries refused pushes together and handed their shards back (each committing a final checkpoint first unless the receivers held the whole job), and each receiver served the share it held${g.moved !== undefined ? ` (${g.moved} of ${g.to}; a shard without one restores its share from those checkpoints)` : ''}. Meanwhile the trainers' calls were refused and retried; a step not acknowledged ran again at the new count.</p>
<table><tr><th>asked at</th><th>of</th><th>${g.from} shards handed back</th><th>${g.to} shards serving</th><th>training resumed</th><th>acknowledged updates until then, read back at ${g.to} shards</th></tr>
<tr><td>${g.askedAt !== undefined ? seconds(g.askedAt - t0) : 'never'}</td><td>${escape(g.askedOf ?? '-')}</td><td>${after(g.handedBackAt)}</td><td>${after(g.servedAt)}${g.moved !== undefined ? ` (${g.moved} of ${g.to} shares copied live)` : ''}${g.restoreMs !== undefined ? ` (${g.moved ? 'the others' : 'each share'} restored in ${g.restoreMs} ms or less)` : ''}</td><td>${after(g.resumedAt)}${g.refusedAt !== undefined && g.resumedAt !== undefined ? ` (paused ${seconds(g.resumedAt - g.refusedAt)}: from the first shard refusing pushes)` : ''}</td><td>${audit}</td></tr></table>`;
}

/**
 * What the audit counted, beside what the job's setting promises: with replicas 0 a failover
 * loses what the shard acknowledged after its last checkpoint; with replicas, nothing; a growth
 * never loses anything (each primary hands back a final checkpoint).
 */
function auditSection(
  audit: { acknowledged: number; lost: number; doubled: number },
  replicas: unknown,
  grew: boolean,
): string {
  const promise =
    Number(replicas) > 0
      ? 'with replicas, a failover promotes a replica that holds every acknowledged push: none may be lost'
      : 'with replicas 0, a failover restores the last checkpoint: the pushes the shard acknowledged after it are lost';
  return `<h2>Acknowledged updates</h2>
<p>A client of the demo's own pushed one row of table <code>acks</code> per step, through the same ${grew ? 'growth and ' : ''}failures; each row it was told was applied must read exactly 1 at the end (${escape(promise)}${grew ? '; a growth hands every shard over in a final checkpoint: it loses none' : ''}).</p>
<p><b>${audit.lost}</b> of ${audit.acknowledged} acknowledged updates lost · ${audit.doubled} applied twice</p>`;
}
