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
 *   ckpt digest [--json] DIR|MANIFEST…     SHA-256 of the state the latest checkpoints of a job
 *                                          restore, the same at any shard count
 *
 *   verify, export and digest of a cluster job: --etcd-endpoints <urls> --job <name> <checkpoint dir>
 *
 *   npx nx run tools:ckpt -- inspect checkpoints/shard-0/e3-s1-….ckpt
 */
import { Command, Option } from 'commander';
import {
  etcdSecurityOptions,
  etcdSecuritySettings,
  listOption,
  versionLine,
} from '@pserver/config';
import { findManifests, type ShardManifest } from './checkpoint-files';
import { clusterManifests } from './cluster-manifests';
import { digest } from './digest';
import { exportSafetensors } from './export-safetensors';
import { inspect } from './inspect';
import { verify } from './verify';

const print = (line: string): void => console.log(line);
const program = new Command('ckpt')
  .description('Inspect, verify and export pserver checkpoints.')
  .version(versionLine('ckpt'), '--version', 'print the version and exit');
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
/** Options that read a cluster job's metas from etcd instead of `manifest.json` files. */
const clusterOptions = (command: Command): Command => {
  command
    .addOption(
      listOption(
        '--etcd-endpoints <urls>',
        "a cluster job: read its checkpoint metas from etcd (the directory is the job's checkpoint volume)",
        'CKPT_ETCD_ENDPOINTS',
      ),
    )
    .addOption(
      new Option('--job <name>', 'the cluster job (with --etcd-endpoints)').env('CKPT_JOB'),
    );
  for (const option of etcdSecurityOptions('CKPT')) command.addOption(option);
  return command;
};

interface ClusterOptions {
  etcdEndpoints?: string[];
  job?: string;
  etcdCa?: string;
  etcdCert?: string;
  etcdKey?: string;
  etcdUser?: string;
  etcdPasswordFile?: string;
}

/** The manifests of `targets`: `manifest.json` files (standalone), or the cluster job's in etcd. */
async function manifestsOf(targets: string[], options: ClusterOptions): Promise<ShardManifest[]> {
  if (!options.etcdEndpoints) {
    if (options.job) throw new Error('--job needs --etcd-endpoints');
    return targets.flatMap(findManifests);
  }
  if (!options.job) throw new Error('--etcd-endpoints needs --job');
  if (targets.length !== 1)
    throw new Error(`a cluster job has one checkpoint directory; got ${targets.length}`);
  const security = etcdSecuritySettings(options, (message) => {
    throw new Error(message);
  });
  return clusterManifests(options.etcdEndpoints, options.job, targets[0]!, security);
}

clusterOptions(
  program
    .command('verify')
    .argument(
      '<dir>',
      'a checkpoint directory, a shard directory or a manifest.json (a cluster job: its checkpoint directory)',
    )
    .description(
      "check every committed checkpoint and every file of its chain (a delta's full checkpoint and earlier deltas) " +
        "against its meta and its parent, and that every table id is in one of its shard's buckets; " +
        'a broken file fails every checkpoint whose chain needs it',
    ),
).action(async (dir: string, options: ClusterOptions) => {
  if (!(await verify(await manifestsOf([dir], options), print))) process.exitCode = 1;
});
clusterOptions(
  program
    .command('export')
    .argument(
      '<targets...>',
      'checkpoint directories, shard directories or manifest.json files of all shards (a cluster job: its checkpoint directory)',
    )
    .requiredOption('--out <file>', 'the safetensors file to write')
    .description(
      'write the latest checkpoint of every shard as one safetensors file of whole tensors; each table ' +
        'as <table>.ids (I64 [rows]) and <table>.values (F32 [rows, dim]), the rows of all shards sorted by id; ' +
        "a delta is exported as the state its chain restores (the full checkpoint, each delta's evictions " +
        'and rows applied in order), the same bytes as a full checkpoint of that state',
    ),
).action(async (targets: string[], options: ClusterOptions & { out: string }) => {
  await exportSafetensors(await manifestsOf(targets, options), options.out, print);
});

clusterOptions(
  program
    .command('digest')
    .argument(
      '<targets...>',
      'checkpoint directories, shard directories or manifest.json files of all shards (a cluster job: its checkpoint directory)',
    )
    .option('--json', 'print one JSON document')
    .description(
      'print the SHA-256 of the state the latest checkpoint of every shard restores (a delta as its chain ' +
        'restores it): every dense record by name and every table row by id with its optimizer state, count ' +
        'and age, the ids pending admission; nothing of the shards themselves, so the digest is the same ' +
        'at any shard count (libs/checkpoint/README.md, "Job digest")',
    ),
).action(async (targets: string[], options: ClusterOptions & { json?: boolean }) => {
  await digest(await manifestsOf(targets, options), print, options.json === true);
});

program.parseAsync(process.argv).catch((err: unknown) => {
  console.error(`ckpt: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
