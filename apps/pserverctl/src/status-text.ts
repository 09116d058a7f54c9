import type { JobStatus, MoveStatus } from './job-status';
import { reshapeLine } from './reshape-text';

/** A job's status as lines for a terminal: the job, the masters, a table of shards, trainers, the pass. */
export function statusText(status: JobStatus): string {
  const lines: string[] = [];
  if (!status.job) {
    lines.push('no master leads the job (or none answered)');
  } else {
    lines.push(
      `job ${status.job} · ${status.consistency} · replicas ${status.replicas} · ${
        status.initialized ? 'initialized' : 'not initialized'
      } · ${status.finished ? 'FINISHED' : status.healthy ? 'every shard serving' : 'DEGRADED'}`,
    );
  }
  if (status.reshape) lines.push(reshapeLine(status.reshape));
  lines.push(
    `masters: ${status.masters
      .map((m) => `${m.address} ${m.role}${m.error ? ` (${m.error})` : ''}`)
      .join(', ')}`,
  );
  if (status.shards.length > 0) {
    const rows = status.shards.map((s) => [
      String(s.index),
      s.state,
      s.member || '-',
      s.address || '-',
      String(s.epoch),
      s.checkpointAgeSeconds === undefined ? '-' : `${Math.round(s.checkpointAgeSeconds)} s ago`,
      s.version === undefined ? '-' : String(s.version),
      s.replicas.length === 0
        ? '-'
        : s.replicas
            .map((r) => {
              const lag = r.lagPushes === undefined ? '' : `, lag ${r.lagPushes}`;
              return `${r.member} (${r.inSync ? 'in sync' : 'copying'}${lag})`;
            })
            .join(', '),
      s.error ?? '',
    ]);
    lines.push(
      ...table(
        ['shard', 'state', 'member', 'address', 'epoch', 'checkpoint', 'version', 'replicas', ''],
        rows,
      ),
    );
    const moving = status.shards.flatMap((s) => (s.moves ?? []).map((m) => moveLine(s.index, m)));
    if (moving.length > 0) lines.push('live moves, copied while the old shards serve:', ...moving);
  }
  if (status.job) {
    if (status.spares.length > 0)
      lines.push(`spares: ${status.spares.map((s) => `${s.member} ${s.address}`).join(', ')}`);
    lines.push(
      status.trainers.length === 0
        ? 'trainers: none'
        : `trainers: ${status.trainers
            .map((t) => `${t.id} ${t.name}${t.pendingTasks ? ` (${t.pendingTasks} tasks)` : ''}`)
            .join(', ')}`,
    );
    const pass = status.pass;
    lines.push(
      pass
        ? `pass ${pass.pass}: ${pass.todo} todo, ${pass.pending} pending, ${pass.done} done, ${pass.failed} failed`
        : 'dataset: none set',
    );
  }
  return `${lines.join('\n')}\n`;
}

/** One receiver's progress with one old shard's slices. */
function moveLine(shard: number, m: MoveStatus): string {
  const copy =
    m.copyBytes === 0 ? 'copy being written' : `${size(m.sentBytes)} of ${size(m.copyBytes)} sent`;
  return `  shard ${shard} → index ${m.index} of ${m.shardCount}: ${m.member}, ${copy}, ${m.state} (lag ${m.lagPushes} pushes)`;
}

function size(bytes: number): string {
  if (bytes < 2 ** 10) return `${bytes} B`;
  if (bytes < 2 ** 20) return `${Math.round(bytes / 2 ** 10)} KiB`;
  if (bytes < 2 ** 30) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}

/** Left-aligned columns, two spaces apart. */
function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
