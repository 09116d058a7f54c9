import fs from 'node:fs/promises';
import path from 'node:path';
import { metaFromJson, type CheckpointMeta } from '@pserver/checkpoint';
import { PserverError } from '../shard/errors';
import type { PrimaryCalls } from './replica-follower';

/**
 * Fetches a primary's copy of its shard (FetchSnapshot: a checkpoint file, streamed) into
 * `scratchDir`, emptied first: the copy's meta, its path under `scratchDir`, and the sequence
 * number it was taken at.
 */
export async function fetchCopy(
  scratchDir: string,
  fetchSnapshot: PrimaryCalls['fetchSnapshot'],
  signal: AbortSignal,
  /** Called with the copy's meta as soon as it arrives, before its bytes. */
  onMeta?: (meta: CheckpointMeta) => void,
): Promise<{ meta: CheckpointMeta; seq: number }> {
  await fs.rm(scratchDir, { recursive: true, force: true });
  await fs.mkdir(scratchDir, { recursive: true, mode: 0o700 });
  let meta: CheckpointMeta | undefined;
  let seq = 0;
  let file: fs.FileHandle | undefined;
  try {
    await fetchSnapshot(async (chunk) => {
      if (!meta) {
        meta = metaFromJson(JSON.parse(chunk.metaJson));
        seq = chunk.seq;
        const target = path.join(scratchDir, meta.path);
        await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        file = await fs.open(target, 'w', 0o600);
        onMeta?.(meta);
      }
      if (chunk.data.byteLength > 0) await file!.write(chunk.data);
    }, signal);
  } finally {
    await file?.close();
  }
  if (!meta) throw new PserverError('PSERVER_INVALID_STREAM', 'FetchSnapshot sent nothing');
  return { meta, seq };
}
