/**
 * The checkpoint tool (README.md beside it):
 *   ckpt inspect FILE                      header, tensors, tables, sizes, checksum status
 *   ckpt verify DIR                        every committed checkpoint under DIR against its meta,
 *                                          table rows against the shard's buckets
 *   ckpt export --out FILE DIR|MANIFEST…   the latest checkpoints of a job as one safetensors file,
 *                                          tables as <table>.ids and <table>.values
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
  .argument('<file>', 'a checkpoint file (.ckpt)')
  .description(
    'print the header, the tensors, the tables (dim, buckets, rows, row layout, step, bytes) and whether the checksum holds',
  )
  .action(async (file: string) => {
    if (!(await inspect(file, print))) process.exitCode = 1;
  });
program
  .command('verify')
  .argument('<dir>', 'a checkpoint directory, a shard directory or a manifest.json')
  .description(
    "check every committed checkpoint against its meta, and that every table id is in one of its shard's buckets",
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
      'as <table>.ids (I64 [rows]) and <table>.values (F32 [rows, dim]), the rows of all shards sorted by id',
  )
  .action(async (targets: string[], options: { out: string }) => {
    await exportSafetensors(targets, options.out, print);
  });
program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(`ckpt: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
