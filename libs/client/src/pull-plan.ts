import { ClientError } from './errors';

/** A block to read and the bytes of its content. */
export interface PlannedBlock {
  name: string;
  bytes: number;
}

/** Bytes a reply spends on one entry besides its content (name, element type, shape, tags). */
const entryOverheadBytes = 64;
/** Bytes of a reply besides its entries. */
const replyOverheadBytes = 1024;

/**
 * Splits one shard's reads into GetParams calls whose replies stay under `budgetBytes` (half the
 * message limit: the limit is not the place to cut close), in the order given. A block larger
 * than the budget is read alone; one whose reply cannot fit under `limitBytes` at all cannot be
 * read by any split: CLIENT_MESSAGE_TOO_LARGE, at once.
 */
export function planPulls(
  blocks: readonly PlannedBlock[],
  budgetBytes: number,
  limitBytes: number,
): string[][] {
  const calls: string[][] = [];
  let current: string[] = [];
  let used = replyOverheadBytes;
  for (const block of blocks) {
    const size = block.bytes + entryOverheadBytes + Buffer.byteLength(block.name);
    if (size + replyOverheadBytes > limitBytes) {
      throw new ClientError(
        'CLIENT_MESSAGE_TOO_LARGE',
        `block ${block.name}: ${block.bytes} bytes, over the client's message limit ` +
          `(maxMessageBytes ${limitBytes}): raise maxMessageBytes and the pservers' ` +
          `--max-message-mb, or lower the job's block size`,
      );
    }
    if (current.length > 0 && used + size > budgetBytes) {
      calls.push(current);
      current = [];
      used = replyOverheadBytes;
    }
    current.push(block.name);
    used += size;
  }
  if (current.length > 0) calls.push(current);
  return calls;
}

/**
 * Ids per GetRows call of a table with `dim` values per row, so that a reply (dim float32 values
 * and a found bit per id) and a request (8 bytes per id) stay under `budgetBytes`.
 */
export function rowsPerCall(dim: number, budgetBytes: number): number {
  const perRow = Math.max(dim * 4 + 1, 8);
  return Math.max(1, Math.floor((budgetBytes - replyOverheadBytes) / perRow));
}
