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
   * child logger binds itself (its `component`) is left to the child.
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
 * Creates a logger. Lines are written synchronously: a process that exits or is killed right
 * after logging (a failpoint, a fatal error) still leaves its last lines for whoever reads them.
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
  const base = pino(
    {
      name,
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      ...(options.context ? { mixin: contextMixin(options.context) } : {}),
    },
    destination,
  );
  return wrap(base);
}

function contextMixin(
  context: () => LogFields,
): (merge: object, level: number, logger: pino.Logger) => object {
  return (_merge, _level, logger) => {
    const fields = context();
    const bound = logger.bindings();
    return Object.fromEntries(Object.entries(fields).filter(([key]) => !(key in bound)));
  };
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

function wrap(log: pino.Logger): Logger {
  const at =
    (method: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal') =>
    (msg: string, fields?: LogFields): void => {
      if (fields) log[method](fields, msg);
      else log[method](msg);
    };
  return {
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
    child: (bindings) => wrap(log.child(bindings)),
  };
}
