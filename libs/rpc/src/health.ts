import {
  loadPackageDefinition,
  type ChannelCredentials,
  type ChannelOptions,
  type Server,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import {
  HealthImplementation,
  protoPath as healthProtoPath,
  type ServingStatus,
} from 'grpc-health-check';
import { channelSecurity, type ClientSecurity } from './security/client-security';

export type { ServingStatus };

/**
 * The standard `grpc.health.v1.Health` service. The empty service name is the process as a whole
 * (readiness); named services (e.g. `pserver.v1.ParameterServer`) report their own status.
 */
export class HealthService {
  private readonly impl: HealthImplementation;
  private readonly statuses = new Map<string, ServingStatus>();

  constructor(services: string[]) {
    const initial = Object.fromEntries(
      ['', ...services].map((name) => [name, 'NOT_SERVING' as const]),
    );
    this.impl = new HealthImplementation(initial);
    for (const name of Object.keys(initial)) this.statuses.set(name, 'NOT_SERVING');
  }

  addTo(server: Server): void {
    this.impl.addToServer(server);
  }

  set(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    this.impl.setStatus(service, status);
  }

  /** Sets every service, the overall one included. */
  setAll(status: ServingStatus): void {
    for (const name of this.statuses.keys()) this.set(name, status);
  }

  get(service = ''): ServingStatus | undefined {
    return this.statuses.get(service);
  }
}

interface HealthClient {
  check(
    request: { service: string },
    options: { deadline: number },
    callback: (err: Error | null, reply?: { status: ServingStatus }) => void,
  ): void;
  close(): void;
}

type HealthClientConstructor = new (
  address: string,
  creds: ChannelCredentials,
  options: ChannelOptions,
) => HealthClient;
let healthClientConstructor: HealthClientConstructor | undefined;

function healthClient(address: string, security: ClientSecurity): HealthClient {
  healthClientConstructor ??= (
    loadPackageDefinition(loadSync(healthProtoPath, { enums: String })) as unknown as {
      grpc: { health: { v1: { Health: HealthClientConstructor } } };
    }
  ).grpc.health.v1.Health;
  const channel = channelSecurity(security);
  return new healthClientConstructor(address, channel.credentials, channel.options);
}

/** Asks `address` for the health of `service` ('' = the process as a whole). */
export function checkHealth(
  address: string,
  service = '',
  timeoutMs = 5_000,
  security: ClientSecurity = {},
): Promise<ServingStatus> {
  const client = healthClient(address, security);
  return new Promise((resolve, reject) => {
    client.check({ service }, { deadline: Date.now() + timeoutMs }, (err, reply) => {
      client.close();
      if (err) reject(err);
      else resolve(reply?.status ?? 'UNKNOWN');
    });
  });
}
