/**
 * The dangerous points of the write path, in order. A test setting (a failpoint) can kill the
 * process at any of them; whatever the point, a restart must find the last committed checkpoint.
 */
export const writePoints = [
  'before-tmp-write',
  'mid-write',
  'after-write-before-fsync',
  'after-fsync-before-rename',
  'after-rename-before-dir-fsync',
  'before-commit',
  'after-commit-before-delete',
] as const;

export type WritePoint = (typeof writePoints)[number];

/** Called at each point; the default does nothing. */
export type WritePointHook = (point: WritePoint) => void | Promise<void>;

export function isWritePoint(value: string): value is WritePoint {
  return (writePoints as readonly string[]).includes(value);
}
