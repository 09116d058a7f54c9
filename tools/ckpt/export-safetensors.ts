import fs from 'node:fs/promises';
import path from 'node:path';
import { readCheckpointChain } from '@pserver/checkpoint';
import {
  elementSizes,
  isElementTypeName,
  parseBlockName,
  type ElementTypeName,
} from '@pserver/proto';
import { latestCheckpoints, type ShardManifest } from './checkpoint-files';
import { TableExport, type OutputTensor } from './export-tables';
import { RestoredTables, type RestoredIds } from './restored-tables';

/** safetensors' names of the element types. */
const dtypes: Record<ElementTypeName, string> = {
  ELEMENT_TYPE_FLOAT32: 'F32',
  ELEMENT_TYPE_FLOAT64: 'F64',
  ELEMENT_TYPE_INT32: 'I32',
  ELEMENT_TYPE_UINT32: 'U32',
  ELEMENT_TYPE_INT64: 'I64',
  ELEMENT_TYPE_UINT64: 'U64',
  ELEMENT_TYPE_FLOAT16: 'F16',
  ELEMENT_TYPE_BFLOAT16: 'BF16',
};

interface Piece {
  file: string;
  block: number;
  bytes: number;
}

interface WholeTensor extends OutputTensor {
  elementType: ElementTypeName;
  /** The shape the records give (empty for a 1-D tensor whose blocks carry none). */
  recordShape: number[];
  pieces: Piece[];
}

/**
 * Writes the latest checkpoint of every shard of a job as one safetensors file of whole tensors:
 * blocks `<name>@<k>` reassembled in order, shapes restored, and each sparse table as
 * `<table>.ids` and `<table>.values` (`TableExport`). A delta is exported as the state its chain
 * restores: the full checkpoint's rows, each delta's evictions removed and its rows replacing or
 * adding theirs, as the pserver restores it. Two passes over each chain, so memory stays near one
 * record (plus about 18 bytes per table row): the first lays the output out and finds which file
 * holds each restored row, the second writes each block and row at its offset.
 */
export async function exportSafetensors(
  manifests: ShardManifest[],
  out: string,
  print: (line: string) => void,
): Promise<void> {
  const files = latestCheckpoints(manifests).map(({ root, meta }) => ({
    root,
    file: path.join(root, meta.path),
    meta,
    restored: new Map<string, RestoredIds>(),
  }));

  // Pass 1: which tensors, which blocks, where each goes; which ids each shard's chain restores.
  // Every file of a chain holds the tensors whole: the meta's own file (the last) gives them.
  const tensors = new Map<string, WholeTensor>();
  const tables = new TableExport();
  for (const shard of files) {
    const { root, file, meta } = shard;
    const restored = new RestoredTables();
    let reading = file;
    let last = false;
    await readCheckpointChain(
      root,
      meta,
      {
        file: (position) => {
          reading = path.join(root, position.file.path);
          last = position.last;
          restored.file(position.index, position.file.path);
        },
        table: (record) => {
          tables.table(reading, record);
          restored.table(record);
        },
        tableEvictions: (evictions) => restored.tableEvictions(evictions),
        tableRows: (rows) => restored.tableRows(rows),
        tensor: (record) => {
          if (!last) return;
          const t = record.tensor!;
          if (!isElementTypeName(t.elementType))
            throw new Error(`${file}: ${t.name} has element type ${t.elementType}`);
          const { tensor: name, block } = parseBlockName(t.name);
          const whole = tensors.get(name) ?? {
            name,
            elementType: t.elementType,
            dtype: dtypes[t.elementType],
            recordShape: t.shape,
            shape: [],
            pieces: [],
            bytes: 0,
            offset: 0,
          };
          if (whole.elementType !== t.elementType)
            throw new Error(`${t.name}: element type differs between blocks`);
          whole.pieces.push({ file, block: block ?? 0, bytes: t.content.byteLength });
          whole.bytes += t.content.byteLength;
          tensors.set(name, whole);
        },
      },
      // Nothing a visitor gets is kept past its call: ids are copied, tensors only measured.
      { reuseBuffers: true },
    );
    restored.end();
    shard.restored = restored.tables;
    tables.shard(restored.tables);
  }
  const ordered = [...tensors.values()].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  const header: Record<string, unknown> = {
    __metadata__: { format: 'pt', source: 'pserver checkpoint export' },
  };
  const output: OutputTensor[] = [];
  for (const tensor of ordered) {
    tensor.pieces.sort((a, b) => a.block - b.block);
    tensor.pieces.forEach((piece, k) => {
      if (piece.block !== k)
        throw new Error(
          `${tensor.name}: block ${k} is missing (found blocks ${tensor.pieces.map((p) => p.block).join(', ')})`,
        );
    });
    const elements = tensor.bytes / elementSizes[tensor.elementType];
    const shape = tensor.recordShape.length > 0 ? tensor.recordShape : [elements];
    if (shape.reduce((a, b) => a * b, 1) !== elements) {
      throw new Error(
        `${tensor.name}: shape [${shape.join(', ')}] does not hold its ${elements} elements`,
      );
    }
    tensor.shape = shape;
    output.push(tensor);
  }
  const dense = new Set(output.map((t) => t.name));
  const tableTensors = tables.tensors();
  for (const t of tableTensors) {
    if (dense.has(t.name)) throw new Error(`${t.name}: both a tensor and a table's column`);
    output.push(t);
  }
  output.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let offset = 0;
  for (const tensor of output) {
    tensor.offset = offset;
    header[tensor.name] = {
      dtype: tensor.dtype,
      shape: tensor.shape,
      data_offsets: [offset, offset + tensor.bytes],
    };
    offset += tensor.bytes;
  }
  // The header is padded with spaces to a multiple of 8 bytes, as the format recommends.
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const headerBytes = Buffer.from(json, 'utf8');
  const dataStart = 8 + headerBytes.byteLength;

  // Pass 2: each block to its place.
  const handle = await fs.open(out, 'w', 0o600);
  try {
    const prefix = Buffer.alloc(8);
    prefix.writeBigUInt64LE(BigInt(headerBytes.byteLength));
    await handle.write(prefix, 0, 8, 0);
    await handle.write(headerBytes, 0, headerBytes.byteLength, 8);
    const blockOffsets = new Map<string, number>();
    for (const tensor of ordered) {
      let at = dataStart + tensor.offset;
      for (const piece of tensor.pieces) {
        blockOffsets.set(`${piece.file}\u0000${tensor.name}\u0000${piece.block}`, at);
        at += piece.bytes;
      }
    }
    tables.writeIds(handle.fd, dataStart);
    for (const { root, file, meta, restored } of files) {
      const writes: Promise<unknown>[] = [];
      let index = 0;
      let last = false;
      await readCheckpointChain(root, meta, {
        file: (position) => {
          index = position.index;
          last = position.last;
        },
        tableRows: (rows) =>
          tables.writeRows(handle.fd, dataStart, rows, restored.get(rows.table)!, index),
        tensor: (record) => {
          if (!last) return;
          const t = record.tensor!;
          const { tensor: name, block } = parseBlockName(t.name);
          const at = blockOffsets.get(`${file}\u0000${name}\u0000${block ?? 0}`)!;
          writes.push(handle.write(t.content, 0, t.content.byteLength, at));
        },
      });
      await Promise.all(writes);
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  print(
    `wrote ${out}: ${ordered.length} tensors, ${tableTensors.length / 2} tables, ${offset} bytes of data, from ${files.length} shards`,
  );
}
