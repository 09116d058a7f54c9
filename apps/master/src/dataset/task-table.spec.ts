import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseDatasetRequest } from './dataset-spec';
import { groupFiles, listFiles } from './file-listing';
import { TaskTable } from './task-table';

describe('TaskTable', () => {
  it('cuts record ranges, the last one shorter', () => {
    const table = new TaskTable({ kind: 'records', records: 10, taskRecords: 4 }, []);
    expect(table.count).toBe(3);
    expect([0, 1, 2].map((id) => table.rangeOf(id))).toEqual([
      { records: { start: 0, end: 4 } },
      { records: { start: 4, end: 8 } },
      { records: { start: 8, end: 10 } },
    ]);
  });

  it('cuts files into byte ranges that cover each file exactly, skipping empty files', () => {
    const files = [
      { path: '/a', size: 10 },
      { path: '/empty', size: 0 },
      { path: '/b', size: 3 },
      { path: '/c', size: 8 },
    ];
    const table = new TaskTable({ kind: 'files', globs: ['/*'], taskBytes: 4 }, files);
    expect(table.count).toBe(3 + 0 + 1 + 2);
    const ranges = Array.from({ length: table.count }, (_, id) => table.rangeOf(id));
    expect(ranges).toEqual([
      { file: { path: '/a', start: 0, end: 4 } },
      { file: { path: '/a', start: 4, end: 8 } },
      { file: { path: '/a', start: 8, end: 10 } },
      { file: { path: '/b', start: 0, end: 3 } },
      { file: { path: '/c', start: 0, end: 4 } },
      { file: { path: '/c', start: 4, end: 8 } },
    ]);
  });

  it('refuses a dataset without data', () => {
    expect(
      () => new TaskTable({ kind: 'files', globs: ['x'], taskBytes: 4 }, [{ path: '/e', size: 0 }]),
    ).toThrow('the dataset has no data');
  });
});

describe('listFiles', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'listing-'));
  fs.writeFileSync(path.join(dir, 'b.jsonl'), '{"x":1}\n');
  fs.writeFileSync(path.join(dir, 'a.jsonl'), '{"x":22}\n');
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'n\n');
  afterAll(() => fs.rmSync(dir, { recursive: true }));

  it('finds the files of every glob, sorted, once each, with their sizes', async () => {
    const files = await listFiles([path.join(dir, '*.jsonl'), path.join(dir, 'a.*')]);
    expect(files).toEqual([
      { path: path.join(dir, 'a.jsonl'), size: 9 },
      { path: path.join(dir, 'b.jsonl'), size: 8 },
    ]);
    expect(await listFiles(['*.txt'], dir)).toEqual([
      { path: path.join(dir, 'notes.txt'), size: 2 },
    ]);
  });

  it('names the globs that match nothing', async () => {
    await expect(listFiles([path.join(dir, '*.jsonl'), '/no/such/*.csv'])).rejects.toMatchObject({
      code: 'MASTER_INVALID_DATASET',
      message: expect.stringContaining("no file matches '/no/such/*.csv'"),
    });
  });

  it('groups files so that no group is larger than the bound', () => {
    const files = Array.from({ length: 1000 }, (_, i) => ({ path: `/data/part-${i}`, size: i }));
    const groups = groupFiles(files, 4096);
    expect(groups.flat()).toEqual(files);
    for (const group of groups) expect(JSON.stringify(group).length).toBeLessThanOrEqual(4096 + 2);
  });
});

describe('parseDatasetRequest', () => {
  const files = { globs: ['/d/*.jsonl'], taskBytes: 1024 };

  it('fills the defaults', () => {
    expect(parseDatasetRequest({ source: 'files', files })).toEqual({
      source: { kind: 'files', ...files },
      taskTimeoutMs: 300_000,
      maxFailures: 3,
    });
  });

  it.each([
    [{ source: 'files', files: { globs: [], taskBytes: 1 } }, 'files.globs: empty'],
    [
      { source: 'files', files: { globs: ['/x'], taskBytes: 0 } },
      'files.taskBytes: must be ≥ 1, got 0',
    ],
    [
      { source: 'records', records: { records: 0, taskRecords: 1 } },
      'records.records: must be ≥ 1, got 0',
    ],
    [
      { source: 'records', records: { records: 5, taskRecords: 0 } },
      'records.taskRecords: must be ≥ 1, got 0',
    ],
    [{}, 'source: set files or records'],
    [{ source: 'files', files, taskTimeoutMs: 0 }, 'taskTimeoutMs: must be 1 to'],
  ])('refuses %j', (request, message) => {
    expect(() => parseDatasetRequest(request as never)).toThrow(message);
  });
});
