import {
  loadPackageDefinition,
  type ChannelCredentials,
  type ChannelOptions,
  type ServiceClientConstructor,
} from '@grpc/grpc-js';
import {
  packageDefinition,
  type MasterClient,
  type MasterDefinition,
  type ParameterServerClient,
  type ParameterServerDefinition,
  type ReplicationClient,
  type ReplicationDefinition,
} from '@pserver/proto';
import { tolerantDeserializers } from './unparsable-request';

const v1 = (
  loadPackageDefinition(packageDefinition) as unknown as {
    pserver: {
      v1: {
        ParameterServer: ServiceClientConstructor;
        Master: ServiceClientConstructor;
        Replication: ServiceClientConstructor;
      };
    };
  }
).pserver.v1;

/**
 * The `pserver.v1.ParameterServer` service, for `server.addService`. A request that does not
 * parse reaches the handler as an `UnparsableRequest` (see there), answered INVALID_ARGUMENT.
 */
export const parameterServerService = tolerantDeserializers(
  v1.ParameterServer.service,
) as unknown as ParameterServerDefinition;
/** The `pserver.v1.Master` service, for `server.addService`; requests as above. */
export const masterService = tolerantDeserializers(
  v1.Master.service,
) as unknown as MasterDefinition;

/** The `pserver.v1.Replication` service (between the pservers of a shard); requests as above. */
export const replicationService = tolerantDeserializers(
  v1.Replication.service,
) as unknown as ReplicationDefinition;

/** A typed replication client of another pserver. */
export function replicationClient(
  address: string,
  credentials: ChannelCredentials,
  options?: ChannelOptions,
): ReplicationClient {
  return new v1.Replication(address, credentials, options) as unknown as ReplicationClient;
}

/** A typed client of a pserver. */
export function parameterServerClient(
  address: string,
  credentials: ChannelCredentials,
  options?: ChannelOptions,
): ParameterServerClient {
  return new v1.ParameterServer(address, credentials, options) as unknown as ParameterServerClient;
}

/** A typed client of a master. */
export function masterClient(
  address: string,
  credentials: ChannelCredentials,
  options?: ChannelOptions,
): MasterClient {
  return new v1.Master(address, credentials, options) as unknown as MasterClient;
}

/** Service names as the health service and reflection know them. */
export const serviceNames = {
  parameterServer: 'pserver.v1.ParameterServer',
  master: 'pserver.v1.Master',
  replication: 'pserver.v1.Replication',
} as const;
