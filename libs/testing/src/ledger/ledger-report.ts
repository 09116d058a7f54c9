import { describeEntries } from './ledger-verdict';
import type { LedgerReport } from './ledger-run';

const ms = (value: number | undefined): string =>
  value === undefined ? 'never' : `${Math.round(value)} ms`;

/**
 * The figures of a run as printable lines: doubles, step errors, lost updates, and per fault the
 * time from the cluster serving again to every trainer stepping again.
 */
export function describeLedgerReport(report: LedgerReport): string {
  const { verdict } = report;
  const lines = [
    `one-hot ledger, ${report.language} trainers: ${verdict.acknowledged} steps acknowledged, ` +
      `${report.restores} shard restores (${report.restoredDeltas} of a delta chain), ` +
      `${report.adoptions} orphaned states adopted, ` +
      (report.reshaped.shares > 0
        ? `${report.reshaped.shares} shares restored onto another shard count (${report.reshaped.withMarksAhead} with marks ahead), `
        : '') +
      (report.moved.shares > 0
        ? `${report.moved.shares} shares moved live (${report.moved.withMarksAhead} with marks ahead), `
        : '') +
      `${ms(report.durationMs)} in all`,
    `  doubles: ${describeEntries(verdict.doubles)}`,
    `  step errors: ${report.stepErrors.length}` +
      (report.stepErrors.length > 0
        ? ` (first: ordinal ${report.stepErrors[0]!.ordinal} k ${report.stepErrors[0]!.k}: ${report.stepErrors[0]!.error})`
        : ''),
    `  lost updates (acknowledged after the restored snapshot): ${verdict.lost.length}`,
    `  unexplained zeros: ${describeEntries(verdict.unexplainedZeros)}`,
    `  phantoms (set, never acknowledged): ${describeEntries(verdict.phantoms)}`,
  ];
  const rows = report.rowVerdict;
  if (rows)
    lines.push(
      `  row ledger: doubles ${describeEntries(rows.doubles)}, lost ${rows.lost.length}, ` +
        `unexplained zeros ${describeEntries(rows.unexplainedZeros)}, ` +
        `phantoms ${describeEntries(rows.phantoms)}`,
    );
  if (report.unreadCheckpoints.length > 0)
    lines.push(`  unreadable restored checkpoints: ${report.unreadCheckpoints.join('; ')}`);
  for (const t of report.trainers) {
    lines.push(
      `  trainer ${t.ordinal}: exit ${t.exit.code ?? t.exit.signal}, ${t.acknowledged} acknowledged, ` +
        `done says ${t.doneSteps ?? 'nothing'}, trainer ids ${t.trainerIds.join(' → ')}`,
    );
    if (t.lastWords)
      lines.push(`    its last lines:`, ...t.lastWords.map((line) => `      ${line}`));
  }
  for (const fault of report.faults) {
    const notes = Object.entries(fault.notes)
      .map(([key, value]) => `${key} ${value}`)
      .join(', ');
    const earlier = fault.earlier
      ? ` (${fault.earlier.what} → ${ms(fault.everyTrainerSteppingFromEarlierMs)})`
      : '';
    lines.push(
      `  ${fault.name}: ${fault.reference} → every trainer stepping again ${ms(fault.everyTrainerSteppingMs)}${earlier}` +
        `${fault.recovered ? '' : ' (NOT all stepping again within the bound)'}; ${notes}`,
    );
  }
  return lines.join('\n');
}
