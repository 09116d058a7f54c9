import { Command, InvalidArgumentError, Option } from 'commander';
import { defaultLogFormat, logLevels, type LogFormat, type LogLevel } from '@pserver/logging';

/** Everything the pserver reads from its command line and environment, parsed and checked. */
export interface PserverConfig {
  host: string;
  port: number;
  logLevel: LogLevel;
  logFormat: LogFormat;
  /** How long SIGTERM lets in-flight calls finish before they are cancelled. */
  shutdownGraceMs: number;
}

/**
 * Parses flags (`argv` as in `process.argv`), falling back to `PSERVER_*` environment variables,
 * which commander reads from `process.env`, and then to defaults. An invalid value stops the
 * process with a message naming the flag (commander exits with code 1).
 */
export function loadConfig(argv: string[]): PserverConfig {
  const program = new Command('pserver')
    .description(
      'A parameter server shard: holds tensors, applies optimizer updates, serves them over gRPC.',
    )
    .addOption(
      new Option('--host <address>', 'address to listen on')
        .env('PSERVER_HOST')
        .default('127.0.0.1'),
    )
    .addOption(
      new Option('--port <port>', 'gRPC port (0 picks a free one)')
        .env('PSERVER_PORT')
        .default(8100)
        .argParser(integerIn(0, 65_535)),
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
      new Option('--shutdown-grace-ms <ms>', 'time in-flight calls get to finish on SIGTERM')
        .env('PSERVER_SHUTDOWN_GRACE_MS')
        .default(10_000)
        .argParser(integerIn(0, 3_600_000)),
    );
  program.parse(argv, { from: 'node' });
  const options = program.opts<{
    host: string;
    port: number;
    logLevel: LogLevel; // checked by .choices()
    logFormat?: LogFormat;
    shutdownGraceMs: number;
  }>();
  return {
    host: options.host,
    port: options.port,
    logLevel: options.logLevel,
    logFormat: options.logFormat ?? defaultLogFormat(),
    shutdownGraceMs: options.shutdownGraceMs,
  };
}

function integerIn(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || n < min || n > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}, got '${value}'.`);
    }
    return n;
  };
}
