import fs from 'node:fs/promises';

const newline = 0x0a;

/**
 * The lines of a file that begin in the byte range [start, end) (the input split of line
 * formats): a range starting mid-line skips to the next line start, and the last line is read to
 * its end even past `end`. Ranges that tile a file thus read every line exactly once. Lines come
 * without their `\n` (or `\r\n`); a last line without a newline counts.
 */
export async function* readLines(
  path: string,
  start: number,
  end: number,
  chunkBytes = 64 * 1024,
): AsyncGenerator<string> {
  const file = await fs.open(path, 'r');
  try {
    const chunk = Buffer.allocUnsafe(chunkBytes);
    // Does a line begin at `start`? Only if it is the file's first byte or follows a newline.
    let skipping = false;
    if (start > 0) {
      const { bytesRead } = await file.read(chunk, 0, 1, start - 1);
      skipping = bytesRead === 1 && chunk[0] !== newline;
    }
    if (!skipping && start >= end) return;
    let pieces: Buffer[] = [];
    for (let position = start; ;) {
      const { bytesRead } = await file.read(chunk, 0, chunkBytes, position);
      if (bytesRead === 0) break;
      const bytes = chunk.subarray(0, bytesRead);
      for (let from = 0; from < bytesRead;) {
        const at = bytes.indexOf(newline, from);
        const stop = at === -1 ? bytesRead : at;
        if (!skipping) pieces.push(Buffer.from(bytes.subarray(from, stop)));
        if (at === -1) break;
        if (skipping) skipping = false;
        else yield decode(pieces);
        pieces = [];
        from = at + 1;
        if (position + from >= end) return; // the next line begins outside the range
      }
      position += bytesRead;
    }
    if (!skipping && pieces.some((p) => p.length > 0)) yield decode(pieces);
  } finally {
    await file.close();
  }
}

function decode(pieces: Buffer[]): string {
  const line = Buffer.concat(pieces).toString('utf8');
  return line.endsWith('\r') ? line.slice(0, -1) : line;
}
