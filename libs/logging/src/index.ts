export type { LogFields, LogFormat, LogLevel, Logger, LoggerOptions } from './logger';
export {
  createLogger,
  defaultLogFormat,
  defaultLoggerOptions,
  isLogLevel,
  logLevels,
  silentLogger,
} from './logger';
