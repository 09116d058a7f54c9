import { Command, InvalidArgumentError, Option } from 'commander';
import { isWritePoint, type WritePoint } from '@pserver/checkpoint';
import { defaultLogFormat, logLevels, type LogFormat, type LogLevel } from '@pserver/logging';

/** Everything the pserver reads from its command line and environment, parsed and checked. */
export interface PserverConfig {
  host: string;
  port: number;
  /** This shard's index in standalone mode. */
  index: number;
  /** The job's shard count in standalone mode. */
  shards: number;
  maxMessageBytes: number;
  flowControlWindowBytes: number;
  maxPushBytesInFlight: number;
  /** The checkpoint directory; this shard writes `<dir>/shard-<index>/`. */
  checkpointDir: string;
  checkpointIntervalMs: number;
  checkpointRetain: number;
  /** Start empty even though committed checkpoints were all lost. */
  allowFreshStart: boolean;
  /** Test setting: at this write-path point, SIGKILL the process or fail with ENOSPC once. */
  failpoint: { point: WritePoint; action: 'kill' | 'enospc' } | undefined;
  logLevel: LogLevel;
  logFormat: LogFormat;
  /** How long SIGTERM lets in-flight calls finish before they are cancelled. */
  shutdownGraceMs: number;
}

const mib = 1024 * 1024;

/**
 * Parses flags (`argv` as in `process.argv`), falling back to `PSERVER_*` environment variables,
 * which commander reads from `process.env`, and then to defaults. An invalid value stops the
 * process with a message naming the flag (commander exits with code 1).
 */
export function loadConfig(argv: string[]): PserverConfig {
  const program = new Command('pserver')
    .description(
      'A parameter server shard: holds tensors, applies optimizer updates, serves them over gRPC.\n' +
        'Without etcd endpoints it runs standalone: shard --index of --shards.',
    )
    .addOption(
      new Option('--host <address>', 'address to listen on')
        .env('PSERVER_HOST')
        .default('127.0.0.1'),
    )
    .addOption(
      integerOption(
        '--port <port>',
        'gRPC port (0 picks a free one)',
        'PSERVER_PORT',
        8100,
        0,
        65_535,
      ),
    )
    .addOption(
      integerOption(
        '--index <i>',
        "this shard's index (standalone)",
        'PSERVER_INDEX',
        0,
        0,
        1_000_000,
      ),
    )
    .addOption(
      integerOption(
        '--shards <n>',
        'the job’s shard count (standalone)',
        'PSERVER_SHARDS',
        1,
        1,
        1_000_000,
      ),
    )
    .addOption(
      integerOption(
        '--max-message-mb <MiB>',
        'largest gRPC message received or sent',
        'PSERVER_MAX_MESSAGE_MB',
        128,
        1,
        2047,
      ),
    )
    .addOption(
      integerOption(
        '--flow-control-window-mb <MiB>',
        'HTTP/2 receive window per connection and stream',
        'PSERVER_FLOW_CONTROL_WINDOW_MB',
        32,
        1,
        1024,
      ),
    )
    .addOption(
      integerOption(
        '--max-push-mb-in-flight <MiB>',
        'bytes of pushes staged at once; beyond: RESOURCE_EXHAUSTED',
        'PSERVER_MAX_PUSH_MB_IN_FLIGHT',
        1024,
        1,
        1_048_576,
      ),
    )
    .addOption(
      new Option(
        '--checkpoint-dir <dir>',
        'checkpoint directory (this shard uses <dir>/shard-<index>/)',
      )
        .env('PSERVER_CHECKPOINT_DIR')
        .default('checkpoints'),
    )
    .addOption(
      integerOption(
        '--checkpoint-interval-s <s>',
        'seconds between periodic checkpoints (when the shard changed)',
        'PSERVER_CHECKPOINT_INTERVAL_S',
        600,
        1,
        31_536_000,
      ),
    )
    .addOption(
      integerOption(
        '--checkpoint-retain <n>',
        'committed checkpoints kept',
        'PSERVER_CHECKPOINT_RETAIN',
        3,
        1,
        1000,
      ),
    )
    .addOption(
      new Option(
        '--allow-fresh-start',
        'start empty when every committed checkpoint is lost or corrupt (otherwise: exit 3)',
      ).env('PSERVER_ALLOW_FRESH_START'),
    )
    .addOption(
      new Option(
        '--failpoint <point[:enospc]>',
        'testing only: SIGKILL the process (or fail with ENOSPC once) at a checkpoint write point',
      )
        .env('PSERVER_FAILPOINT')
        .argParser(parseFailpoint)
        .hideHelp(),
    )
    .addOption(
      new Option('--log-level <level>', 'least severe level logged')
        .env('PSERVER_LOG_LEVEL')
        .choices(logLevels)
        .default('info'),
    )
    .addOption(
      new Option(
        '--log-format <format>',
        'json lines, or pretty for terminals (default: pretty on a TTY)',
      )
        .env('PSERVER_LOG_FORMAT')
        .choices(['json', 'pretty']),
    )
    .addOption(
      integerOption(
        '--shutdown-grace-ms <ms>',
        'time in-flight calls get to finish on SIGTERM',
        'PSERVER_SHUTDOWN_GRACE_MS',
        10_000,
        0,
        3_600_000,
      ),
    );
  program.parse(argv, { from: 'node' });
  const options = program.opts<{
    host: string;
    port: number;
    index: number;
    shards: number;
    maxMessageMb: number;
    flowControlWindowMb: number;
    maxPushMbInFlight: number;
    checkpointDir: string;
    checkpointIntervalS: number;
    checkpointRetain: number;
    allowFreshStart?: boolean;
    failpoint?: PserverConfig['failpoint'];
    logLevel: LogLevel; // checked by .choices()
    logFormat?: LogFormat;
    shutdownGraceMs: number;
  }>();
  if (options.index >= options.shards) {
    program.error(
      `error: option '--index <i>' must be below --shards (${options.shards}), got ${options.index}`,
    );
  }
  return {
    host: options.host,
    port: options.port,
    index: options.index,
    shards: options.shards,
    maxMessageBytes: options.maxMessageMb * mib,
    flowControlWindowBytes: options.flowControlWindowMb * mib,
    maxPushBytesInFlight: options.maxPushMbInFlight * mib,
    checkpointDir: options.checkpointDir,
    checkpointIntervalMs: options.checkpointIntervalS * 1000,
    checkpointRetain: options.checkpointRetain,
    allowFreshStart: options.allowFreshStart ?? false,
    failpoint: options.failpoint,
    logLevel: options.logLevel,
    logFormat: options.logFormat ?? defaultLogFormat(),
    shutdownGraceMs: options.shutdownGraceMs,
  };
}

function integerOption(
  flags: string,
  description: string,
  env: string,
  defaultValue: number,
  min: number,
  max: number,
): Option {
  return new Option(flags, description)
    .env(env)
    .default(defaultValue)
    .argParser((value: string) => {
      const n = Number(value);
      if (!/^\d+$/.test(value.trim()) || n < min || n > max) {
        throw new InvalidArgumentError(
          `expected an integer from ${min} to ${max}, got '${value}'.`,
        );
      }
      return n;
    });
}

function parseFailpoint(value: string): PserverConfig['failpoint'] {
  const [point = '', action = 'kill'] = value.split(':');
  if (!isWritePoint(point) || (action !== 'kill' && action !== 'enospc')) {
    throw new InvalidArgumentError(`expected <write point>[:enospc], got '${value}'.`);
  }
  return { point, action };
}
