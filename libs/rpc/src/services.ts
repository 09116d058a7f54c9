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
} from '@pserver/proto';

const v1 = (
  loadPackageDefinition(packageDefinition) as unknown as {
    pserver: {
      v1: { ParameterServer: ServiceClientConstructor; Master: ServiceClientConstructor };
    };
  }
).pserver.v1;

/** The `pserver.v1.ParameterServer` service, for `server.addService`. */
export const parameterServerService = v1.ParameterServer
  .service as unknown as ParameterServerDefinition;
/** The `pserver.v1.Master` service, for `server.addService`. */
export const masterService = v1.Master.service as unknown as MasterDefinition;

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
} as const;
