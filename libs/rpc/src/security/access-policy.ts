import type {
  MasterDefinition,
  ParameterServerDefinition,
  ReplicationDefinition,
} from '@pserver/proto';
import { serviceNames } from '../services';

/**
 * Roles a caller can hold (SECURITY.md). `admin` may call everything; the others exactly what the
 * table below lists. A caller may hold several roles (a certificate rule and a token).
 */
export const roles = ['trainer', 'viewer', 'admin', 'pserver'] as const;
export type Role = (typeof roles)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (roles as readonly string[]).includes(value);
}

/** Who may call a method: anyone, any authenticated caller, or holders of these roles. */
export type Access = 'public' | 'authenticated' | readonly Role[];

const training: Access = ['trainer'];
const observing: Access = ['trainer', 'viewer'];
const adminOnly: Access = [];
/** The pservers of a shard, to each other. */
const peers: Access = ['pserver'];

/**
 * Typed by the services' definitions: a new RPC does not compile until it is placed here.
 * Trainers push, pull, initialize and use the master's session, init and task RPCs; viewers (e.g.
 * dashboards) read status and the cluster view; checkpoints and the shard count are the admin's.
 */
const parameterServer: Record<keyof ParameterServerDefinition, Access> = {
  InitParam: training,
  InitTable: training,
  FinishInitParams: training,
  SendGrads: training,
  SendGradsStream: training,
  GetParams: training,
  GetRows: training,
  ListParams: training,
  GetShardStatus: observing,
  SaveCheckpoint: adminOnly,
  Drain: adminOnly,
};

const master: Record<keyof MasterDefinition, Access> = {
  RegisterTrainer: training,
  KeepAlive: training,
  UnregisterTrainer: training,
  GetClusterView: observing,
  WatchCluster: observing,
  BeginInit: training,
  FinishInit: training,
  SetDataset: training,
  GetTask: training,
  TaskFinished: training,
  TaskFailed: training,
  Status: observing,
  SetDesiredShards: adminOnly,
  // A trainer ends the job it trains when it is done; an operator may too.
  FinishJob: training,
};

const replication: Record<keyof ReplicationDefinition, Access> = {
  FetchSnapshot: peers,
  ReplicaLoaded: peers,
  ForwardStream: peers,
};

const byPath = new Map<string, Access>([
  // Probes (Kubernetes, load balancers) carry no credentials.
  ['/grpc.health.v1.Health/Check', 'public'],
  ['/grpc.health.v1.Health/Watch', 'public'],
  // The schema is public (proto/); listing it needs no role, only a known caller.
  ['/grpc.reflection.v1.ServerReflection/ServerReflectionInfo', 'authenticated'],
  ['/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo', 'authenticated'],
  ...pathsOf(serviceNames.parameterServer, parameterServer),
  ...pathsOf(serviceNames.master, master),
  ...pathsOf(serviceNames.replication, replication),
]);

function pathsOf(service: string, methods: Record<string, Access>): [string, Access][] {
  return Object.entries(methods).map(([method, access]) => [`/${service}/${method}`, access]);
}

/** Who may call `path` (`/package.Service/Method`); unknown paths are admin-only. */
export function accessTo(path: string): Access {
  return byPath.get(path) ?? adminOnly;
}

/** Whether a caller holding `held` may call `path`. */
export function mayCall(path: string, held: ReadonlySet<Role>): boolean {
  const access = accessTo(path);
  if (access === 'public' || held.has('admin')) return true;
  if (access === 'authenticated') return held.size > 0;
  return access.some((role) => held.has(role));
}
