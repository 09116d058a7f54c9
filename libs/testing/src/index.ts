export type { ExitStatus, SpawnOptions } from './child-process';
export { ManagedProcess, spawnNode, spawnProcess, stopAllProcesses } from './child-process';
export type { EtcdServer, EtcdServerOptions } from './etcd-server';
export { defaultEtcdServerOptions, etcdBinary, etcdInstallHint, startEtcd } from './etcd-server';
export { freePort } from './free-port';
export type { WaitForOptions } from './wait-for';
export { sleep, waitFor } from './wait-for';
export { appBundle, workspaceRoot } from './workspace';
export type { PserverDriverOptions } from './pserver-driver';
export {
  bytesOf,
  defaultPserverDriverOptions,
  float32s,
  float64s,
  PserverDriver,
} from './pserver-driver';
export type { PserverProcess, StartPserverOptions } from './pserver-process';
export { startPserverProcess } from './pserver-process';
export { tempDir } from './temp-dir';
