import { messageType } from '@pserver/proto';
import { checksumAlgorithm } from './format';
import type { ShardSnapshot } from './snapshot';
import type { WrittenFile } from './writer';

/**
 * Names a committed checkpoint file and how to verify it. Kept in the standalone manifest (and,
 * in cluster mode, in etcd) as the proto3 JSON of `pserver.v1.CheckpointMeta`, so any language
 * can read it.
 */
export interface CheckpointMeta {
  uuid: string;
  /** Relative to the checkpoint directory, e.g. `shard-0/e7-s3-<uuid>.ckpt`. */
  path: string;
  size: number;
  checksumAlgorithm: typeof checksumAlgorithm;
  /** CRC-32C of the whole file, 8 hex digits. */
  checksum: string;
  /** Nanoseconds since the Unix epoch, as a decimal string (it does not fit a double). */
  timestampNs: string;
  shardEpoch: number;
  index: number;
  seq: number;
  updatesApplied: number;
  formatVersion: number;
  /**
   * A delta's chain: the files it applies on, the full checkpoint first, its parent last.
   * Empty for a full checkpoint.
   */
  chain: ChainFile[];
  /** Where the file's index frame is (files with tables). */
  indexPlace?: FramePlace;
}

/** A file of a delta's chain: enough to find and verify it. */
export interface ChainFile {
  uuid: string;
  path: string;
  size: number;
  /** CRC-32C of the whole file, 8 hex digits. */
  checksum: string;
  indexPlace?: FramePlace;
}

/** A frame's place in a file: offset of its length prefix, bytes (prefix included), CRC-32C. */
export interface FramePlace {
  offset: number;
  length: number;
  /** 8 hex digits. */
  checksum: string;
}

/**
 * The meta of a file `writeCheckpointFile` wrote from `snapshot`; `chain` is what a delta applies
 * on (the parent's `chainOf`), empty for a full checkpoint.
 */
export function checkpointMeta(
  snapshot: ShardSnapshot,
  written: WrittenFile,
  chain: ChainFile[] = [],
): CheckpointMeta {
  return {
    uuid: snapshot.uuid,
    path: written.path,
    size: written.size,
    checksumAlgorithm,
    checksum: written.checksum,
    timestampNs: snapshot.createdUnixNs,
    shardEpoch: snapshot.shardEpoch,
    index: snapshot.index,
    seq: snapshot.seq,
    updatesApplied: snapshot.updatesApplied,
    formatVersion: written.formatVersion,
    chain,
    ...(written.indexPlace && { indexPlace: written.indexPlace }),
  };
}

/** The files restoring `meta` reads, in order: its chain, then its own. */
export function chainOf(meta: CheckpointMeta): ChainFile[] {
  const { uuid, path, size, checksum, indexPlace } = meta;
  return [...meta.chain, { uuid, path, size, checksum, ...(indexPlace && { indexPlace }) }];
}

/** The proto3 JSON of a meta (64-bit integers as strings, bytes as base64). */
export function metaToJson(meta: CheckpointMeta): Record<string, unknown> {
  const type = messageType('CheckpointMeta');
  const hex = (checksum: string): Buffer => Buffer.from(checksum, 'hex');
  const place = (at: FramePlace | undefined) => at && { ...at, checksum: hex(at.checksum) };
  const message = type.fromObject({
    ...meta,
    checksum: hex(meta.checksum),
    indexPlace: place(meta.indexPlace),
    chain: meta.chain.map((file) => ({
      ...file,
      checksum: hex(file.checksum),
      indexPlace: place(file.indexPlace),
    })),
  });
  return type.toObject(message, {
    longs: String,
    enums: String,
    bytes: String,
  });
}

/** Reads a meta from its proto3 JSON; throws on a value that is not one. */
export function metaFromJson(json: unknown): CheckpointMeta {
  const type = messageType('CheckpointMeta');
  const message = type.fromObject(json as Record<string, unknown>);
  const raw = type.toObject(message, {
    longs: String,
    enums: String,
    bytes: Buffer,
    defaults: true,
  }) as Record<string, unknown>;
  const number = (key: string): number => Number(raw[key]);
  if (raw['checksumAlgorithm'] !== checksumAlgorithm) {
    // The value as given: protobufjs reads a name it does not know as UNSPECIFIED.
    const given =
      (json as Record<string, unknown>)['checksumAlgorithm'] ?? raw['checksumAlgorithm'];
    throw new Error(
      `checkpoint meta: checksum algorithm ${String(given)} is not supported (${checksumAlgorithm} is)`,
    );
  }
  return {
    uuid: String(raw['uuid']),
    path: String(raw['path']),
    size: number('size'),
    checksumAlgorithm,
    checksum: (raw['checksum'] as Buffer).toString('hex'),
    timestampNs: String(raw['timestampNs']),
    shardEpoch: number('shardEpoch'),
    index: number('index'),
    seq: number('seq'),
    updatesApplied: number('updatesApplied'),
    formatVersion: number('formatVersion'),
    chain: (raw['chain'] as Record<string, unknown>[]).map((file) => ({
      uuid: String(file['uuid']),
      path: String(file['path']),
      size: Number(file['size']),
      checksum: (file['checksum'] as Buffer).toString('hex'),
      ...placeOf(file['indexPlace']),
    })),
    ...placeOf(raw['indexPlace']),
  };
}

/** `{ indexPlace }` from a decoded `FramePlace` (proto3 leaves an unset message null). */
function placeOf(raw: unknown): { indexPlace?: FramePlace } {
  if (raw === null || raw === undefined) return {};
  const place = raw as Record<string, unknown>;
  return {
    indexPlace: {
      offset: Number(place['offset']),
      length: Number(place['length']),
      checksum: (place['checksum'] as Buffer).toString('hex'),
    },
  };
}
