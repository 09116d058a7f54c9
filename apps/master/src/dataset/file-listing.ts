import fs from 'node:fs/promises';
import path from 'node:path';
import { glob } from 'tinyglobby';
import { invalid } from './dataset-spec';
import type { DatasetFile } from './task-table';

/**
 * The files the globs match, as absolute paths in sorted order, with their sizes now. Every glob
 * must match at least one file: a pattern that matches nothing is a mistake worth stopping for.
 */
export async function listFiles(globs: string[], cwd = process.cwd()): Promise<DatasetFile[]> {
  const paths = new Set<string>();
  const unmatched: string[] = [];
  for (const pattern of globs) {
    const matches = await glob(pattern, { cwd, absolute: true, onlyFiles: true, dot: false });
    if (matches.length === 0) unmatched.push(pattern);
    for (const match of matches) paths.add(path.resolve(match));
  }
  if (unmatched.length > 0)
    throw invalid(`files.globs: no file matches ${unmatched.map((g) => `'${g}'`).join(', ')}`);
  const files: DatasetFile[] = [];
  for (const file of [...paths].sort()) {
    const { size } = await fs.stat(file);
    files.push({ path: file, size });
  }
  return files;
}

/** Cuts the file list into groups small enough for one etcd value each. */
export function groupFiles(files: DatasetFile[], maxBytes = 256 * 1024): DatasetFile[][] {
  const groups: DatasetFile[][] = [];
  let group: DatasetFile[] = [];
  let bytes = 0;
  for (const file of files) {
    const size = JSON.stringify(file).length + 1;
    if (group.length > 0 && bytes + size > maxBytes) {
      groups.push(group);
      group = [];
      bytes = 0;
    }
    group.push(file);
    bytes += size;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}
