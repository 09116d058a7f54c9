import fs from 'node:fs';
import path from 'node:path';
import {
  ChainFileError,
  readCheckpointChain,
  readCheckpointFile,
  type CheckpointHeader,
  type CheckpointMeta,
} from '@pserver/checkpoint';
import { elementSizes, isElementTypeName } from '@pserver/proto';
import { findManifests, type ShardManifest } from './checkpoint-files';
import { RestoredTables } from './restored-tables';
import { addRows, describeTable, summarize, type TableSummary } from './tables';

/** A file with the meta that committed it. */
interface Committed {
  manifest: ShardManifest;
  meta: CheckpointMeta;
}

/**
 * Prints a checkpoint file's header, tensors, tables and checksum status, and its chain: a
 * checkpoint file alone, or every committed one of a checkpoint directory, a shard directory or
 * a manifest, newest first. False when a file or a chain it needs does not read.
 */
export async function inspect(target: string, print: (line: string) => void): Promise<boolean> {
  if (fs.statSync(target).isFile() && path.basename(target) !== 'manifest.json')
    return inspectFile(target, print, findCommitted(target));
  let intact = true;
  for (const manifest of findManifests(target)) {
    for (const meta of manifest.checkpoints) {
      print(`== ${meta.path}`);
      const file = path.join(manifest.root, meta.path);
      if (!(await inspectFile(file, print, { manifest, meta }))) intact = false;
    }
  }
  return intact;
}

async function inspectFile(
  file: string,
  print: (line: string) => void,
  committed: Committed | undefined,
): Promise<boolean> {
  const lines: string[] = [];
  const tensors: string[] = [];
  const tables = new Map<string, TableSummary>();
  let header: CheckpointHeader | undefined;
  let marks = 0;
  const delta = (): boolean => (header?.parentUuid ?? '') !== '';
  const printAll = (): void => {
    lines.forEach((line) => print(line));
    if (tables.size > 0) print(`tables: ${tables.size}`);
    tables.forEach((t) => print(describeTable(t, delta())));
  };
  let result;
  try {
    result = await readCheckpointFile(file, {
      header: (h) => {
        header = h;
        lines.push(
          `header: format ${h.formatVersion}, shard ${h.shardIndex} of ${h.shardCount}, epoch ${h.shardEpoch}, seq ${h.seq}, ` +
            `created ${new Date(Number(BigInt(h.createdUnixNs) / 1_000_000n)).toISOString()}, ` +
            (h.parentUuid !== '' ? `delta on ${h.parentUuid}` : 'full'),
        );
      },
      tensor: (record) => {
        const t = record.tensor!;
        const size = isElementTypeName(t.elementType) ? elementSizes[t.elementType] : 1;
        const optimizer = record.optimizer?.algorithm ?? (record.state ? 'sgd' : 'none');
        tensors.push(
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
  } catch (err) {
    lines.push(`tensors: ${tensors.length}`, ...tensors);
    printAll();
    print(`BROKEN: ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
  lines.push(`tensors: ${tensors.length}`, ...tensors);
  const chain = committed ? await describeChain(committed, tables) : undefined;
  printAll();
  print(`step marks: ${marks} trainers`);
  print(`size: ${result.size} bytes; records: ${result.records}; crc32c ${result.checksum}: OK`);
  if (!committed) {
    const manifest = path.join(path.dirname(file), 'manifest.json');
    print(
      delta()
        ? `chain: unknown, no meta in ${manifest} names this file (a delta: its rows alone are not the table)`
        : `chain: none (a full checkpoint; no meta in ${manifest} names it)`,
    );
    return true;
  }
  chain!.lines.forEach((line) => print(line));
  return chain!.intact;
}

/** The meta of `file` in the manifest beside it, if one names it. */
function findCommitted(file: string): Committed | undefined {
  const manifestFile = path.join(path.dirname(file), 'manifest.json');
  if (!fs.existsSync(manifestFile)) return undefined;
  const manifest = findManifests(manifestFile)[0]!;
  const resolved = path.resolve(file);
  const meta = manifest.checkpoints.find((m) => path.resolve(manifest.root, m.path) === resolved);
  return meta && { manifest, meta };
}

/**
 * The lines describing a committed file's chain: each file with its size and, per table, the
 * rows it holds (a delta: changed) and the ids it evicted. For a delta, the chain is read (and
 * verified against the meta) to count the rows it restores, set on `tables`.
 */
async function describeChain(
  { manifest, meta }: Committed,
  tables: Map<string, TableSummary>,
): Promise<{ lines: string[]; intact: boolean }> {
  const where = path.relative(manifest.root, manifest.manifestFile);
  if (meta.chain.length === 0)
    return { lines: [`chain: none (a full checkpoint, committed in ${where})`], intact: true };
  const files = [...meta.chain, meta];
  const bytes = files.reduce((n, f) => n + f.size, 0);
  const lines = [`chain: ${files.length} files, ${bytes} bytes (committed in ${where})`];
  const perFile: string[][] = files.map(() => []);
  const restored = new RestoredTables();
  let index = 0;
  try {
    await readCheckpointChain(
      manifest.root,
      meta,
      {
        file: (position) => {
          index = position.index;
          restored.file(position.index, position.file.path);
        },
        table: (record) => {
          restored.table(record);
          const name = record.spec?.name ?? '';
          perFile[index]!.push(
            index === 0
              ? `${name} ${record.rows} rows`
              : `${name} ${record.rows} rows changed, ${record.evicted} ids evicted`,
          );
        },
        tableEvictions: (evictions) => restored.tableEvictions(evictions),
        tableRows: (rows) => restored.tableRows(rows),
      },
      { reuseBuffers: true },
    );
    restored.end();
  } catch (err) {
    const at = err instanceof ChainFileError ? `${err.file.path}: ` : '';
    lines.push(`BROKEN chain: ${at}${err instanceof Error ? err.message : String(err)}`);
    return { lines, intact: false };
  }
  files.forEach((file, k) =>
    lines.push(
      `  ${k === 0 ? 'full ' : 'delta'}  ${file.path}  ${file.size} bytes` +
        (perFile[k]!.length > 0 ? `  ${perFile[k]!.join('; ')}` : ''),
    ),
  );
  for (const [name, summary] of tables) summary.restored = restored.tables.get(name)?.ids.length;
  return { lines, intact: true };
}
