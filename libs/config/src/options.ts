import { InvalidArgumentError, Option } from 'commander';
import { defaultLogFormat, logLevels, type LogFormat, type LogLevel } from '@pserver/logging';

/**
 * Flag helpers shared by the apps' `config.ts`: every flag has an environment variable, and an
 * invalid value stops the process at start with a message naming the flag.
 */

/** An integer flag within [min, max]. */
export function integerOption(
  flags: string,
  description: string,
  env: string,
  defaultValue: number | undefined,
  min: number,
  max: number,
): Option {
  const option = new Option(flags, description).env(env).argParser((value: string) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || n < min || n > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}, got '${value}'.`);
    }
    return n;
  });
  return defaultValue === undefined ? option : option.default(defaultValue);
}

/** A comma-separated list flag (e.g. etcd endpoints). */
export function listOption(flags: string, description: string, env: string): Option {
  return new Option(flags, description).env(env).argParser((value: string) => {
    const items = value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
    if (items.length === 0)
      throw new InvalidArgumentError(`expected a comma-separated list, got '${value}'.`);
    return items;
  });
}

/** `--log-level` and `--log-format`, with `<PREFIX>_LOG_LEVEL` and `<PREFIX>_LOG_FORMAT`. */
export function logOptions(envPrefix: string): Option[] {
  return [
    new Option('--log-level <level>', 'least severe level logged')
      .env(`${envPrefix}_LOG_LEVEL`)
      .choices(logLevels)
      .default('info'),
    new Option(
      '--log-format <format>',
      'json lines, or pretty for terminals (default: pretty on a TTY)',
    )
      .env(`${envPrefix}_LOG_FORMAT`)
      .choices(['json', 'pretty']),
  ];
}

export interface LogSettings {
  logLevel: LogLevel;
  logFormat: LogFormat;
}

/** The log settings from parsed options (`--log-format` defaults to pretty on a terminal). */
export function logSettings(options: { logLevel: string; logFormat?: string }): LogSettings {
  return {
    logLevel: options.logLevel as LogLevel,
    logFormat: (options.logFormat as LogFormat | undefined) ?? defaultLogFormat(),
  };
}
