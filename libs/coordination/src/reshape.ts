import { metaFromJson, metaToJson, type CheckpointMeta } from '@pserver/checkpoint';
import type { MoveDecision } from './live-move';
import type { Reshape } from './shard-tenure';

/**
 * The largest value the job writes into one key (DESIGN section 3): etcd refuses a request above
 * 1.5 MiB, and the reshape record goes in one transaction with the count.
 */
export const maxValueBytes = 1024 * 1024;

/** A reshape pending in the job's state: the record, which one it is, and who restored. */
export interface PendingReshape extends Reshape {
  /** The `reshape` key's create revision: tells this reshape from any later one. */
  readonly revision: number;
  /** The indices with a `reshape/restored/<i>` mark, ascending. */
  readonly restored: readonly number[];
}

/**
 * The `reshape` key's value: `{from, to, sources: {"<j>": <checkpoint meta proto3 JSON>}}`, and
 * for a live change whose receivers hold shares, `moved: {"<k>": "<member>"}`.
 */
export function encodeReshape(reshape: Reshape): string {
  const sources: Record<string, unknown> = {};
  for (const [index, meta] of [...reshape.sources].sort(([a], [b]) => a - b))
    sources[String(index)] = metaToJson(meta);
  const moved = reshape.moved?.size
    ? Object.fromEntries(
        [...reshape.moved].sort(([a], [b]) => a - b).map(([k, m]) => [String(k), m]),
      )
    : undefined;
  return JSON.stringify({ from: reshape.from, to: reshape.to, sources, ...(moved && { moved }) });
}

/** Reads a `reshape` value; throws an Error saying what is wrong with one that is not a record. */
export function parseReshape(value: string): Reshape {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (err) {
    throw new Error(`not JSON (${(err as Error).message})`, { cause: err });
  }
  if (typeof json !== 'object' || json === null) throw new Error('not a JSON object');
  const { from, to, sources, moved } = json as Record<string, unknown>;
  if (!isCount(from)) throw new Error(`from: a shard count ≥ 1, got ${JSON.stringify(from)}`);
  if (!isCount(to)) throw new Error(`to: a shard count ≥ 1, got ${JSON.stringify(to)}`);
  if (typeof sources !== 'object' || sources === null || Array.isArray(sources))
    throw new Error('sources: an object of checkpoint metas by index');
  const parsed = new Map<number, CheckpointMeta>();
  for (const [key, meta] of Object.entries(sources)) {
    const index = /^(0|[1-9]\d*)$/.test(key) ? Number(key) : -1;
    if (index < 0 || index >= from)
      throw new Error(`sources: ${JSON.stringify(key)} is not an index below ${from}`);
    parsed.set(index, sourceMeta(index, meta));
  }
  return {
    from,
    to,
    sources: new Map([...parsed].sort(([a], [b]) => a - b)),
    ...(moved !== undefined && { moved: parseMoved(moved, to) }),
  };
}

/** A record's `moved`: `{"<k>": "<member>"}` for indices k below `to`. */
function parseMoved(moved: unknown, to: number): Map<number, string> {
  if (typeof moved !== 'object' || moved === null || Array.isArray(moved))
    throw new Error('moved: an object of members by index');
  const parsed = new Map<number, string>();
  for (const [key, member] of Object.entries(moved)) {
    const index = /^(0|[1-9]\d*)$/.test(key) ? Number(key) : -1;
    if (index < 0 || index >= to || typeof member !== 'string')
      throw new Error(`moved: ${JSON.stringify(key)} is not an index below ${to} with a member`);
    parsed.set(index, member);
  }
  return parsed;
}

/**
 * The checkpoint meta of old index `index` from its proto3 JSON; throws when it is not one, or
 * names another index (restoring it would misplace tensors).
 */
export function sourceMeta(index: number, json: unknown): CheckpointMeta {
  let meta: CheckpointMeta;
  try {
    meta = metaFromJson(json);
  } catch (err) {
    throw new Error(`sources[${index}]: not a checkpoint meta (${(err as Error).message})`, {
      cause: err,
    });
  }
  if (meta.index !== index)
    throw new Error(`sources[${index}]: the meta is of index ${meta.index} (${meta.path})`);
  return meta;
}

/**
 * A change of the count asked while the job runs: from `from` to `to` shards, once every old
 * index was handed back (`handedBack`, ascending) by an owner that committed a final checkpoint.
 */
export interface LiveReshape {
  readonly from: number;
  readonly to: number;
  /** The `reshape/live` key's create revision: tells this request from any later one. */
  readonly revision: number;
  readonly handedBack: readonly number[];
  /** The receiver of each index of the new count that has one (`reshape/receiver/<k>`), by index. */
  readonly receivers: readonly { index: number; member: string }[];
  /** The old indices whose primary says every receiver loaded its copy (`reshape/copied/<i>`). */
  readonly copied: readonly number[];
  /** The old indices whose primary says the receivers hold its whole shard (`reshape/caught-up/<i>`). */
  readonly caughtUp: readonly number[];
  /** Whether the change goes on or is rolled back, once an old primary decided (`reshape/decision`). */
  readonly decision?: MoveDecision;
}

/** The `reshape/live` value: `{from, to}`. */
export function encodeLiveReshape({ from, to }: Pick<LiveReshape, 'from' | 'to'>): string {
  return JSON.stringify({ from, to });
}

/** Reads a `reshape/live` value; throws an Error saying what is wrong with one that is not one. */
export function parseLiveReshape(value: string): Pick<LiveReshape, 'from' | 'to'> {
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch (err) {
    throw new Error(`not JSON (${(err as Error).message})`, { cause: err });
  }
  if (typeof json !== 'object' || json === null) throw new Error('not a JSON object');
  const { from, to } = json as Record<string, unknown>;
  if (!isCount(from)) throw new Error(`from: a shard count ≥ 1, got ${JSON.stringify(from)}`);
  if (!isCount(to)) throw new Error(`to: a shard count ≥ 1, got ${JSON.stringify(to)}`);
  return { from, to };
}

/** The old indices not handed back yet, ascending. */
export function notHandedBack(live: Pick<LiveReshape, 'from' | 'handedBack'>): number[] {
  const done = new Set(live.handedBack);
  return Array.from({ length: live.from }, (_, i) => i).filter((i) => !done.has(i));
}

/** The indices of the new count that have not restored their share yet, ascending. */
export function unrestoredIndices(reshape: Pick<PendingReshape, 'to' | 'restored'>): number[] {
  const restored = new Set(reshape.restored);
  return Array.from({ length: reshape.to }, (_, i) => i).filter((i) => !restored.has(i));
}

/** `0, 1, 2` — or, for a long list, its first ten and how many more. */
export function indexList(indices: readonly number[]): string {
  const shown = indices.slice(0, 10).join(', ');
  return indices.length > 10 ? `${shown} and ${indices.length - 10} more` : shown;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}
