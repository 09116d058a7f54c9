import { readCheckpointFile } from '@pserver/checkpoint';
import { elementSizes, isElementTypeName } from '@pserver/proto';

/** Prints a checkpoint file's header, records and checksum status. */
export async function inspect(file: string, print: (line: string) => void): Promise<boolean> {
  const rows: string[] = [];
  let marks = 0;
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
      stepMarks: (entries) => (marks = entries.length),
    });
    print(`tensors: ${rows.length}`);
    rows.forEach((row) => print(row));
    print(`step marks: ${marks} trainers`);
    print(`size: ${result.size} bytes; records: ${result.records}; crc32c ${result.checksum}: OK`);
    return true;
  } catch (err) {
    rows.forEach((row) => print(row));
    print(`BROKEN: ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
}
