import type { Server } from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { packageDefinition } from '@pserver/proto';

/**
 * Serves gRPC server reflection (v1 and v1alpha) for the named services of `pserver.v1`, so that
 * tools such as grpcurl can call a server without the .proto files.
 */
export function addReflection(server: Server, services: string[]): void {
  new ReflectionService(packageDefinition, { services }).addToServer(server);
}
