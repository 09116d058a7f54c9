import pino from 'pino';
import pretty from 'pino-pretty';

/** Structured fields attached to a log line. `err` is serialized with its stack and cause. */
export type LogFields = Record<string, unknown>;

export const logLevels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof logLevels)[number];

/** `json`: one JSON object per line (for machines); `pretty`: coloured lines (for terminals). */
export type LogFormat = 'json' | 'pretty';

/** The one logging interface of the project: every app and lib logs through it. */
export interface Logger {
  trace(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  fatal(msg: string, fields?: LogFields): void;
  /** A logger whose every line also carries `bindings` (e.g. `{ component: 'checkpoint' }`). */
  child(bindings: LogFields): Logger;
}

export interface LoggerOptions {
  /** Process or component name, written as `name` on every line. */
  name: string;
  level: LogLevel;
  format: LogFormat;
  /** Where lines go; standard output by default. */
  destination?: NodeJS.WritableStream;
  /**
   * Fields read at each line and added to it, e.g. the shard a pserver serves now. A field a
   * child logger binds itself (its `component`), or the line passes, overrides it.
   */
  context?: () => LogFields;
}

export const defaultLoggerOptions: Omit<LoggerOptions, 'name'> = {
  level: 'info',
  format: 'json',
};

/** `pretty` on a terminal, `json` otherwise: the default an app's config offers. */
export function defaultLogFormat(stream: { isTTY?: boolean } = process.stdout): LogFormat {
  return stream.isTTY ? 'pretty' : 'json';
}

export function isLogLevel(value: string): value is LogLevel {
  return (logLevels as readonly string[]).includes(value);
}

/**
 * Keys every line carries from the logger itself: the process identity and the line's own. A
 * binding or field of one of these names would repeat the key in the line (JSON readers keep
 * one of the two, jq and Loki the last, and the process name is lost), so it is written with a
 * leading underscore instead: `{ name: 'trainer-1' }` becomes `"_name":"trainer-1"`.
 */
const ownKeys = new Set(['level', 'time', 'pid', 'name', 'msg']);

/**
 * Creates a logger. Lines are written synchronously: a process that exits or is killed right
 * after logging (a failpoint, a fatal error) still leaves its last lines for whoever reads them.
 *
 * Each key appears once per line. A child's binding overrides its parent's of the same key
 * (`component: 'sessions'` under `component: 'leader'`), a field passed with the line overrides
 * both, and either overrides the `context`; the keys the logger writes itself are never
 * overridden (see `ownKeys`).
 */
export function createLogger(options: LoggerOptions): Logger {
  const { name, level, format } = { ...defaultLoggerOptions, ...options };
  const destination =
    format === 'pretty'
      ? pretty({
          sync: true,
          colorize: !options.destination && Boolean(process.stdout.isTTY),
          destination: options.destination ?? 1,
          ignore: 'pid,hostname',
          translateTime: 'SYS:HH:MM:ss.l',
        })
      : (options.destination ?? pino.destination({ dest: 1, sync: true }));
  const { context } = options;
  const base = pino(
    {
      name,
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      // pino writes a child's bindings as text after its parent's, and the line's fields after
      // both, so a key bound twice is written twice; this logger merges them into one object
      // per line instead (the context first, so that the bindings and fields win).
      ...(context ? { mixin: () => ({ ...context() }) } : {}),
      formatters: { level: (label) => ({ level: label }), log: renameOwnKeys },
    },
    destination,
  );
  return wrap(base, {});
}

function renameOwnKeys(fields: Record<string, unknown>): Record<string, unknown> {
  if (!Object.keys(fields).some((key) => ownKeys.has(key))) return fields;
  return Object.fromEntries(
    Object.entries(fields).map(([key, value]) => [ownKeys.has(key) ? `_${key}` : key, value]),
  );
}

/** A logger that drops everything: for unit tests and libraries used without one. */
export const silentLogger: Logger = {
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  fatal: () => undefined,
  child: () => silentLogger,
};

/** The root pino logger with `bindings` merged into every line (see `createLogger`). */
function wrap(log: pino.Logger, bindings: LogFields): Logger {
  const bound = Object.keys(bindings).length > 0;
  const at =
    (method: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal') =>
    (msg: string, fields?: LogFields): void => {
      if (fields) log[method](bound ? { ...bindings, ...fields } : fields, msg);
      else if (bound) log[method]({ ...bindings }, msg);
      else log[method](msg);
    };
  return {
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
    child: (more) => wrap(log, { ...bindings, ...more }),
  };
}
