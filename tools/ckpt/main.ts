/**
 * The checkpoint tool (README.md beside it):
 *   ckpt inspect FILE|DIR                  header, tensors, tables, sizes, checksum status, and the
 *                                          chain (full, or a delta: its files, rows changed, ids
 *                                          evicted, rows restored)
 *   ckpt verify DIR                        every committed checkpoint under DIR with every file of
 *                                          its chain against its meta, table ids against the
 *                                          shard's buckets
 *   ckpt export --out FILE DIR|MANIFEST…   the state the latest checkpoints of a job restore (a
 *                                          delta's chain applied) as one safetensors file, tables
 *                                          as <table>.ids and <table>.values
 *
 *   npx nx run tools:ckpt -- inspect checkpoints/shard-0/e3-s1-….ckpt
 */
import { Command } from 'commander';
import { exportSafetensors } from './export-safetensors';
import { inspect } from './inspect';
import { verify } from './verify';

const print = (line: string): void => console.log(line);
const program = new Command('ckpt').description('Inspect, verify and export pserver checkpoints.');
program
  .command('inspect')
  .argument(
    '<target>',
    'a checkpoint file (.ckpt), or a checkpoint directory, shard directory or manifest.json (every committed file)',
  )
  .description(
    'print the header (full or delta), the tensors, the tables (dim, buckets, rows, row layout, step, bytes; ' +
      "a delta's rows changed, ids evicted and the rows its chain restores), whether the checksum holds, " +
      "and the chain of its meta (each file's size, rows and evictions)",
  )
  .action(async (file: string) => {
    if (!(await inspect(file, print))) process.exitCode = 1;
  });
program
  .command('verify')
  .argument('<dir>', 'a checkpoint directory, a shard directory or a manifest.json')
  .description(
    "check every committed checkpoint and every file of its chain (a delta's full checkpoint and earlier deltas) " +
      "against its meta and its parent, and that every table id is in one of its shard's buckets; " +
      'a broken file fails every checkpoint whose chain needs it',
  )
  .action(async (dir: string) => {
    if (!(await verify(dir, print))) process.exitCode = 1;
  });
program
  .command('export')
  .argument(
    '<targets...>',
    'checkpoint directories, shard directories or manifest.json files of all shards',
  )
  .requiredOption('--out <file>', 'the safetensors file to write')
  .description(
    'write the latest checkpoint of every shard as one safetensors file of whole tensors; each table ' +
      'as <table>.ids (I64 [rows]) and <table>.values (F32 [rows, dim]), the rows of all shards sorted by id; ' +
      "a delta is exported as the state its chain restores (the full checkpoint, each delta's evictions " +
      'and rows applied in order), the same bytes as a full checkpoint of that state',
  )
  .action(async (targets: string[], options: { out: string }) => {
    await exportSafetensors(targets, options.out, print);
  });
program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(`ckpt: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
