export type { LogSettings } from './options';
export { integerOption, listOption, logOptions, logSettings } from './options';
export type {
  ClientSecurityFlags,
  EtcdSecuritySettings,
  ServerSecuritySettings,
} from './security-options';
export {
  clientSecurityFiles,
  clientSecurityOptions,
  etcdSecurityOptions,
  etcdSecuritySettings,
  serverSecurityOptions,
  serverSecuritySettings,
} from './security-options';
export { version, versionLine } from './version';
