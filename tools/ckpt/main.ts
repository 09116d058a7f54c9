/**
 * The checkpoint tool:
 *   ckpt inspect FILE                      header, tensors, sizes, checksum status
 *   ckpt verify DIR                        every committed checkpoint under DIR against its meta
 *   ckpt export --out FILE DIR|MANIFEST…   the latest checkpoints of a job as one safetensors file
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
  .description('print the header, the tensors and whether the checksum holds')
  .action(async (file: string) => {
    if (!(await inspect(file, print))) process.exitCode = 1;
  });
program
  .command('verify')
  .argument('<dir>', 'a checkpoint directory, a shard directory or a manifest.json')
  .description('check every committed checkpoint against its meta')
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
    'write the latest checkpoint of every shard as one safetensors file of whole tensors',
  )
  .action(async (targets: string[], options: { out: string }) => {
    await exportSafetensors(targets, options.out, print);
  });
program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(`ckpt: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
