export type {
  ChoiceFlag,
  Flag,
  FlagTable,
  FlagValue,
  FlagValues,
  IntegerFlag,
  ListFlag,
  ParsedFlag,
  SharedFlag,
  SwitchFlag,
  TextFlag,
  Unit,
} from './flag-table';
export { addFlags, flagTable, flagValues, units } from './flag-table';
export type { LogSettings } from './log-flags';
export { logFlags, logSettings } from './log-flags';
export { integerOption, listOption } from './options';
export { sharedFlags } from './shared-flags';
export type {
  ClientSecurityFlags,
  EtcdSecuritySettings,
  ServerSecuritySettings,
} from './security-options';
export {
  clientSecurityFiles,
  clientSecurityOptions,
  etcdSecurityFlags,
  etcdSecurityOptions,
  etcdSecuritySettings,
  serverSecurityFlags,
  serverSecurityOptions,
  serverSecuritySettings,
} from './security-options';
export { version, versionLine } from './version';
