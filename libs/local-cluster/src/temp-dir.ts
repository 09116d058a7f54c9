import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { workspaceRoot } from './workspace';

const created = new Set<string>();

process.once('exit', () => {
  for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * A new empty directory, on /dev/shm when the machine has it (fsync there is nearly free), removed
 * when the process exits. Under Jest, a test file's `process` is a sandbox whose 'exit' never
 * fires: the directory is also listed in `tmp/temp-dirs/<pid>.txt`, which the run's global
 * teardown (`tools/jest/remove-temp-dirs.js`) removes with the directories it names.
 */
export function tempDir(prefix: string): string {
  const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  const dir = fs.mkdtempSync(path.join(base, `pserver-${prefix}-`));
  created.add(dir);
  if (process.env.JEST_WORKER_ID) {
    const lists = path.join(workspaceRoot(), 'tmp', 'temp-dirs');
    fs.mkdirSync(lists, { recursive: true });
    fs.appendFileSync(path.join(lists, `${process.pid}.txt`), dir + '\n');
  }
  return dir;
}
