export type {
  AppProcess,
  PserverProcess,
  StartAppOptions,
  StartPserverOptions,
} from './app-processes';
export { metricsPage, startMasterProcess, startPserverProcess } from './app-processes';
export type { ClusterCertificates, KeyPair } from './certificates';
export { generateCertificates } from './certificates';
export type { ExitStatus, SpawnOptions } from './child-process';
export {
  ManagedProcess,
  parseJsonLine,
  spawnNode,
  spawnProcess,
  stopAllProcesses,
} from './child-process';
export type { CreateJobUsersOptions, EtcdJobUsers, EtcdUser } from './etcd-auth';
export { EtcdAuth } from './etcd-auth';
export type { EtcdCluster, EtcdMember } from './etcd-cluster';
export { startEtcdCluster } from './etcd-cluster';
export type { EtcdServer, EtcdServerOptions, EtcdTlsOptions } from './etcd-server';
export { defaultEtcdServerOptions, etcdBinary, etcdInstallHint, startEtcd } from './etcd-server';
export type { ProxyDirection, ProxyFaults } from './fault-proxy';
export { FaultProxy } from './fault-proxy';
export { freePort } from './free-port';
export type { LabHost } from './network-lab';
export { NetworkLab, networkLabHint } from './network-lab';
export type { LocalClusterOptions } from './local-cluster';
export { defaultLocalClusterOptions, LocalCluster } from './local-cluster';
export { tempDir } from './temp-dir';
export type { WaitForOptions } from './wait-for';
export { sleep, waitFor } from './wait-for';
export { appBundle, bundleScript, workspaceRoot } from './workspace';
