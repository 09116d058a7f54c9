import { fromJSON, type PackageDefinition } from '@grpc/proto-loader';
import { Root, type Enum, type INamespace, type Type } from 'protobufjs';
import descriptorJson from './generated/descriptor.json';
import { loaderOptions } from './loader-options';

// The JSON's inferred literal type is narrower than protobufjs's union type; its shape is protobufjs's own output.
const descriptor = descriptorJson as INamespace;

/** The gRPC services and messages of `proto/pserver/v1`, for `loadPackageDefinition`. */
export const packageDefinition: PackageDefinition = fromJSON(descriptor, loaderOptions);

let root: Root | undefined;

/**
 * A protobufjs message type of package `pserver.v1` (e.g. `CheckpointFrame`), for messages that
 * never cross gRPC: checkpoint files, etcd values.
 */
export function messageType(name: string): Type {
  root ??= Root.fromJSON(descriptor);
  return root.lookupType(`pserver.v1.${name}`);
}

/** A protobufjs enum of package `pserver.v1` (e.g. `ElementType`), for code that decodes by hand. */
export function enumType(name: string): Enum {
  root ??= Root.fromJSON(descriptor);
  return root.lookupEnum(`pserver.v1.${name}`);
}
