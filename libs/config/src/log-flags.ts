import { defaultLogFormat, logLevels, type LogFormat, type LogLevel } from '@pserver/logging';
import { flagTable, type FlagValues } from './flag-table';

/** `--log-level` and `--log-format`, which every server takes. */
export const logFlags = flagTable({
  logLevel: {
    kind: 'choice',
    flags: '--log-level <level>',
    help: 'least severe level logged',
    choices: logLevels,
    default: 'info',
  },
  logFormat: {
    kind: 'choice',
    flags: '--log-format <format>',
    help: 'json lines, or pretty for terminals (default: pretty on a TTY)',
    choices: ['json', 'pretty'],
  },
});

export interface LogSettings {
  logLevel: LogLevel;
  logFormat: LogFormat;
}

/** The log settings from parsed flags (`--log-format` defaults to pretty on a terminal). */
export function logSettings(flags: FlagValues<typeof logFlags>): LogSettings {
  return { logLevel: flags.logLevel, logFormat: flags.logFormat ?? defaultLogFormat() };
}
