import fs from 'node:fs/promises';

/**
 * Makes a directory entry durable (a rename, a new or deleted file): a file's own fsync does not
 * cover the directory that names it.
 */
export async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes a small file atomically and durably: a temporary file next to it, fsync, rename over the
 * target, fsync the directory. A crash at any moment leaves either the old or the new content.
 */
export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  mode = 0o600,
): Promise<void> {
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  const handle = await fs.open(tmp, 'wx', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await fs.rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  await fs.rename(tmp, file);
  await fsyncDirectory(file.slice(0, Math.max(file.lastIndexOf('/'), 1)));
}
