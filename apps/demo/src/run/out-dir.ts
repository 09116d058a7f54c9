import path from 'node:path';
import { workspaceRoot } from '@pserver/local-cluster';

/** `tmp/demo/<prefix><time>` in the repository: a new folder for each run. */
export function defaultOutDir(prefix = ''): string {
  const time = new Date().toISOString().replace(/[:.]/g, '-');
  return path.join(workspaceRoot(), 'tmp', 'demo', `${prefix}${time}`);
}
