import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const created = new Set<string>();

process.once('exit', () => {
  for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A new empty directory, on /dev/shm when the machine has it (fsync there is nearly free), removed
 * when the test process exits.
 */
export function tempDir(prefix: string): string {
  const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  const dir = fs.mkdtempSync(path.join(base, `pserver-${prefix}-`));
  created.add(dir);
  return dir;
}
