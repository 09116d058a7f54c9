export type { LogSettings } from './options';
export { integerOption, listOption, logOptions, logSettings } from './options';
export type { EtcdSecuritySettings, ServerSecuritySettings } from './security-options';
export {
  etcdSecurityOptions,
  etcdSecuritySettings,
  serverSecurityOptions,
  serverSecuritySettings,
} from './security-options';
export { version, versionLine } from './version';
