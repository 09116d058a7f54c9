export type { ExitStatus, SpawnOptions } from './child-process';
export { ManagedProcess, spawnNode, spawnProcess, stopAllProcesses } from './child-process';
export type { EtcdServer, EtcdServerOptions } from './etcd-server';
export { defaultEtcdServerOptions, etcdBinary, etcdInstallHint, startEtcd } from './etcd-server';
export { freePort } from './free-port';
export type { WaitForOptions } from './wait-for';
export { sleep, waitFor } from './wait-for';
export { appBundle, workspaceRoot } from './workspace';
