import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import {
  clientSecurityFiles,
  clientSecurityOptions,
  listOption,
  versionLine,
  type ClientSecurityFlags,
} from '@pserver/config';
import { backoffPolicies, loadClientSecurity, retry, RetryDeadlineError } from '@pserver/rpc';
import { Connection } from './connection';
import { drain, drainText } from './drain';
import { jobStatus, type JobStatus } from './job-status';
import { pendingReshapeOf, shardsText } from './reshape-text';
import { setShardCount } from './shard-count';
import { statusText } from './status-text';

/**
 * pserverctl: an operator's view of a running job, and its few actions, through the masters and
 * pservers' gRPC APIs. Exit codes: 0 done; 1 a call failed (the message says which); 2 bad usage;
 * 3 (status, top) the job is degraded: no master leads, or a shard is not served.
 */
const exitCodes = { ok: 0, failed: 1, usage: 2, degraded: 3 } as const;

interface GlobalOptions extends ClientSecurityFlags {
  master: string[];
  timeoutMs: number;
  json?: boolean;
}

const program = new Command('pserverctl')
  .description("Shows and acts on a running pserver job through its masters and pservers' APIs.")
  .version(versionLine('pserverctl'), '--version', 'print the version and exit')
  .addOption(
    listOption(
      '--master <addresses>',
      'the job’s master replicas, comma-separated',
      'PSERVERCTL_MASTER',
    ),
  )
  .addOption(
    new Option('--timeout-ms <ms>', 'deadline of each call').default(10_000).argParser(positive),
  )
  .option('--json', 'print JSON instead of text')
  .exitOverride()
  .showHelpAfterError();
for (const option of clientSecurityOptions()) program.addOption(option);

program
  .command('status')
  .description(
    'the masters and the leader, every shard (state, member, epoch, checkpoint age, replicas), trainers, the pass',
  )
  .action(() =>
    withConnection(async (connection, options) => {
      const status = await jobStatus(connection, options.master);
      print(options, status, statusText(status));
      return status.job && status.healthy ? exitCodes.ok : exitCodes.degraded;
    }),
  );

program
  .command('top')
  .description('status, redrawn every --interval-s until Ctrl-C (or --count times)')
  .addOption(
    new Option('--interval-s <s>', 'seconds between redraws').default(2).argParser(positive),
  )
  .addOption(
    new Option('--count <n>', 'redraws before exiting (default: until Ctrl-C)').argParser(positive),
  )
  .action((local: { intervalS: number; count?: number }) =>
    withConnection(async (connection, options) => {
      let status: JobStatus | undefined;
      for (let i = 0; local.count === undefined || i < local.count; i++) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, local.intervalS * 1000));
        status = await jobStatus(connection, options.master);
        const text = `${new Date().toISOString()}\n${statusText(status)}`;
        // Redrawn in place on a terminal; one block per redraw otherwise (and one JSON line).
        if (options.json) process.stdout.write(`${JSON.stringify(status)}\n`);
        else process.stdout.write(process.stdout.isTTY ? `\x1b[H\x1b[2J${text}` : `${text}\n`);
      }
      return status?.job && status.healthy ? exitCodes.ok : exitCodes.degraded;
    }),
  );

program
  .command('checkpoint')
  .description('commits a checkpoint on every serving shard now, and waits for them')
  .action(() =>
    withConnection(async (connection, options) => {
      const status = await jobStatus(connection, options.master);
      if (!status.job) throw new Error('no master leads the job: no shard to checkpoint');
      const results = await Promise.all(
        status.shards.map(async (shard) => {
          if (shard.state !== 'serving')
            return { index: shard.index, error: `shard ${shard.index} is ${shard.state}` };
          try {
            const { meta } = await connection.saveCheckpoint(shard.address);
            return { index: shard.index, path: meta?.path, bytes: Number(meta?.size ?? 0) };
          } catch (err) {
            return { index: shard.index, error: (err as Error).message };
          }
        }),
      );
      print(
        options,
        results,
        results
          .map((r) =>
            'error' in r
              ? `shard ${r.index}: FAILED: ${r.error}`
              : `shard ${r.index}: committed ${r.path} (${r.bytes} bytes)`,
          )
          .join('\n') + '\n',
      );
      return results.some((r) => 'error' in r) ? exitCodes.failed : exitCodes.ok;
    }),
  );

program
  .command('shards')
  .description(
    'sets the job’s shard count; once the model is initialized, its pservers restore their shares of the old checkpoints (a running job’s primaries hand their shards back first); waits until the job serves at the new count',
  )
  .argument('<count>', 'the new shard count', positive)
  .option('--force', 'change a running job even when it has fewer pservers than the new count')
  .option('--no-wait', 'return once the change is asked')
  .addOption(
    new Option('--wait-s <s>', 'how long to wait for the job to serve at the new count')
      .default(120)
      .argParser(positive),
  )
  .action((count: number, local: { force?: boolean; wait: boolean; waitS: number }) =>
    withConnection(async (connection, options) => {
      const { answer, servedAfterSeconds } = await setShardCount(
        connection,
        options.master,
        count,
        { force: local.force === true, waitMs: local.wait ? local.waitS * 1000 : undefined },
      );
      const reshape = pendingReshapeOf(answer.reshape);
      const served =
        servedAfterSeconds === undefined
          ? ''
          : `the job serves at ${count} shards, ${servedAfterSeconds.toFixed(1)} s after the change was asked\n`;
      print(
        options,
        {
          shards: answer.shardCount,
          previous: answer.previousShardCount,
          ...(reshape && { reshape }),
          ...(servedAfterSeconds !== undefined && { servedAfterSeconds }),
        },
        shardsText(answer) + served,
      );
      return exitCodes.ok;
    }),
  );

program
  .command('drain')
  .description(
    'hands a pserver’s shard to a spare (a final checkpoint first) and stops it; waits until the shard is served again',
  )
  .argument('<member>', 'the pserver’s member name (as status shows it)')
  .option('--force', 'drain a primary even when no spare or in-sync replica can take over')
  .addOption(
    new Option('--wait-s <s>', 'how long to wait for the shard to be served again')
      .default(120)
      .argParser(positive),
  )
  .action((member: string, local: { force?: boolean; waitS: number }) =>
    withConnection(async (connection, options) => {
      const result = await drain(connection, options.master, member, {
        force: local.force === true,
        waitMs: local.waitS * 1000,
      });
      print(options, result, drainText(result));
      return exitCodes.ok;
    }),
  );

program
  .command('finish')
  .description(
    'finishes the job: every pserver commits a final checkpoint and exits, then the masters',
  )
  .option('--wait', 'wait until every pserver has left')
  .addOption(new Option('--wait-s <s>', 'how long --wait waits').default(300).argParser(positive))
  .action((local: { wait?: boolean; waitS: number }) =>
    withConnection(async (connection, options) => {
      const status = await jobStatus(connection, options.master);
      const leader = status.masters.find((m) => m.role === 'leader');
      if (!leader) throw new Error('no master leads the job');
      await connection.finishJob(leader.address);
      if (local.wait) await pserversGone(connection, options.master, local.waitS * 1000);
      const done = local.wait ? 'every pserver has left' : 'its pservers are leaving';
      print(
        options,
        { job: status.job, finished: true },
        `job ${status.job} is finished; ${done}\n`,
      );
      return exitCodes.ok;
    }),
  );

// verify, export and digest are the checkpoint tool's (dist/tools/ckpt.js, beside this bundle in
// the build and the image): the same commands, reached from the one CLI an operator has. The
// tool's commands that print JSON get pserverctl's --json, which pserverctl's own parser takes
// wherever it stands on the command line.
for (const [name, what, json] of [
  [
    'verify',
    'checks every committed checkpoint of a job (standalone, or a cluster job with --etcd-endpoints --job)',
    false,
  ],
  [
    'export',
    'writes the state a job restores as one safetensors file (dense tensors, tables as ids and values)',
    false,
  ],
  [
    'digest',
    'prints a SHA-256 of the state a job restores (every block and row with its optimizer state), the same at any shard count',
    true,
  ],
] as const)
  program
    .command(name)
    .description(`${what}: the checkpoint tool's ${name} (its options: pserverctl ${name} --help)`)
    .helpOption(false)
    .allowUnknownOption()
    .argument('[arguments...]', `the checkpoint tool's ${name} arguments`)
    .action((args: string[]) => {
      const tool = path.join(__dirname, '..', '..', 'tools', 'ckpt.js');
      if (!fs.existsSync(tool))
        throw new Error(`the checkpoint tool is not at ${tool} (npx nx run tools:build-ckpt)`);
      const asJson = json && program.opts<GlobalOptions>().json ? ['--json'] : [];
      const run = spawnSync(process.execPath, [tool, name, ...asJson, ...args], {
        stdio: 'inherit',
      });
      process.exitCode = run.status ?? exitCodes.failed;
    });

/** Waits until the job's view holds no pserver (or no master answers: they exit after them). */
async function pserversGone(connection: Connection, masters: string[], waitMs: number) {
  try {
    await retry(() => jobStatus(connection, masters), {
      policy: backoffPolicies.pserversLeftPoll,
      timeoutMs: waitMs,
      retryIf: () => false,
      again: (status) =>
        Boolean(status.job) &&
        !(status.shards.every((s) => !s.address) && status.spares.length === 0),
    });
  } catch (err) {
    if (!(err instanceof RetryDeadlineError)) throw err;
    throw new Error(`pservers still registered after ${waitMs / 1000} s (pserverctl status)`, {
      cause: err,
    });
  }
}

/** Runs a command with a connection built from the global options; exits with its code. */
async function withConnection(
  run: (connection: Connection, options: GlobalOptions) => Promise<number>,
): Promise<void> {
  const options = program.opts<GlobalOptions>();
  if (!options.master?.length)
    program.error("error: required option '--master <addresses>' not specified", {
      exitCode: exitCodes.usage,
    });
  const connection = new Connection(
    loadClientSecurity(clientSecurityFiles(options)),
    options.timeoutMs,
  );
  try {
    process.exitCode = await run(connection, options);
  } finally {
    connection.close();
  }
}

function print(options: GlobalOptions, json: unknown, text: string): void {
  process.stdout.write(options.json ? `${JSON.stringify(json)}\n` : text);
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError(`expected a whole number of at least 1, got '${value}'`);
  return n;
}

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) {
    // --help and --version end here too, with exit code 0.
    process.exitCode = err.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    return;
  }
  process.stderr.write(`pserverctl: ${(err as Error).message}\n`);
  process.exitCode = exitCodes.failed;
});
