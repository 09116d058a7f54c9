import { readCheckpointFile } from '@pserver/checkpoint';
import { elementSizes, isElementTypeName } from '@pserver/proto';
import { addRows, describeTable, summarize, type TableSummary } from './tables';

/** Prints a checkpoint file's header, tensors, tables and checksum status. */
export async function inspect(file: string, print: (line: string) => void): Promise<boolean> {
  const rows: string[] = [];
  const tables = new Map<string, TableSummary>();
  let marks = 0;
  const printTables = (): void => {
    if (tables.size === 0) return;
    print(`tables: ${tables.size}`);
    tables.forEach((t) => print(describeTable(t)));
  };
  try {
    const result = await readCheckpointFile(file, {
      header: (h) =>
        print(
          `header: format ${h.formatVersion}, shard ${h.shardIndex} of ${h.shardCount}, epoch ${h.shardEpoch}, seq ${h.seq}, ` +
            `created ${new Date(Number(BigInt(h.createdUnixNs) / 1_000_000n)).toISOString()}`,
        ),
      tensor: (record) => {
        const t = record.tensor!;
        const size = isElementTypeName(t.elementType) ? elementSizes[t.elementType] : 1;
        const optimizer = record.optimizer?.algorithm ?? (record.state ? 'sgd' : 'none');
        rows.push(
          `  ${t.name}  ${t.elementType.replace('ELEMENT_TYPE_', '')}  shape [${t.shape.join(', ')}]  ` +
            `${t.content.byteLength / size} elements  ${t.content.byteLength} bytes  ${optimizer}` +
            (record.state
              ? `  ${record.state.updates} updates  slots [${record.state.slots.map((s) => s.name).join(', ')}]`
              : ''),
        );
      },
      table: (record) => tables.set(record.spec!.name, summarize(record)),
      tableRows: (section) => addRows(tables.get(section.table)!, section),
      stepMarks: (entries) => (marks = entries.length),
    });
    print(`tensors: ${rows.length}`);
    rows.forEach((row) => print(row));
    printTables();
    print(`step marks: ${marks} trainers`);
    print(`size: ${result.size} bytes; records: ${result.records}; crc32c ${result.checksum}: OK`);
    return true;
  } catch (err) {
    rows.forEach((row) => print(row));
    printTables();
    print(`BROKEN: ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
}
