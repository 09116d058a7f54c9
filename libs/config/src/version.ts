// The root package.json is no library, but it is where the version is written: bundled in.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { version as projectVersion } from '../../../package.json';

/**
 * The project's version: the root package.json's, the one place it is written for the
 * TypeScript programs (bundled in at build time); the Python client's `_version.py` repeats it,
 * checked by a test.
 */
export const version: string = projectVersion;

/** What `--version` prints: the program, the version and the Node.js it runs on. */
export function versionLine(program: string): string {
  return `${program} ${version} (node ${process.version})`;
}
