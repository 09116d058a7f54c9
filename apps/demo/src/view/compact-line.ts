/**
 * One line of a process's output made short for a terminal: a JSON log line becomes
 * `level message key=value …`; of the trainers' step events, one in 100 is shown.
 */
export function compactLine(line: string): string | undefined {
  if (!line.startsWith('{')) return line;
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof entry.event === 'string') {
    if (entry.event === 'step' && stepsSeen++ % 100 !== 0) return undefined;
    return [entry.event, ...fields(entry, ['event', 't', 'started'])].join(' ');
  }
  const fixed = ['level', 'msg', 'time', 'pid', 'name', 'hostname'];
  return [String(entry.level ?? ''), String(entry.msg ?? ''), ...fields(entry, fixed)].join(' ');
}

let stepsSeen = 0;

function fields(entry: Record<string, unknown>, skip: string[]): string[] {
  return Object.entries(entry)
    .filter(([k]) => !skip.includes(k))
    .map(
      ([k, v]) =>
        `${k}=${typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(4) : typeof v === 'object' ? JSON.stringify(v) : String(v)}`,
    );
}
