import fs from 'node:fs';
import {
  credentials as grpcCredentials,
  Metadata,
  type ChannelCredentials,
  type ChannelOptions,
} from '@grpc/grpc-js';
import { reconnectOptions } from '../reconnect';
import { authorizationHeader } from './authenticator';

/** How a client proves the servers are theirs, and itself to them (SECURITY.md). */
export interface ClientSecurity {
  /** Connect with TLS. */
  tls?: ClientTls;
  /** Sent as `authorization: Bearer <token>` on every call; needs `tls`. */
  token?: string;
}

export interface ClientTls {
  /** The CA that signed the servers' certificates (PEM); the system's roots when absent. */
  ca?: Buffer | string;
  /** A client certificate chain and its key (PEM), for servers with a client CA (mutual TLS). */
  cert?: Buffer | string;
  key?: Buffer | string;
  /** The name the servers' certificates carry when it is not the host dialled. */
  serverName?: string;
}

/** File paths of the same, for command lines. */
export interface ClientSecurityFiles {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  tokenFile?: string;
  serverName?: string;
}

/**
 * Channel credentials and options for `security` (plaintext when it is empty), with the reconnect
 * backoff every client channel uses.
 */
export function channelSecurity(security: ClientSecurity = {}): {
  credentials: ChannelCredentials;
  options: ChannelOptions;
} {
  const { tls, token } = security;
  if (!tls) {
    if (token !== undefined) {
      throw new Error(
        'a bearer token needs TLS: give `tls` (a token sent in plaintext can be read and replayed)',
      );
    }
    return { credentials: grpcCredentials.createInsecure(), options: reconnectOptions };
  }
  if ((tls.cert === undefined) !== (tls.key === undefined))
    throw new Error('tls.cert and tls.key go together');
  const pem = (value: Buffer | string | undefined): Buffer | null =>
    value === undefined ? null : Buffer.from(value);
  let credentials = grpcCredentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
  if (token !== undefined) {
    const header = `Bearer ${token.trim()}`;
    const callCredentials = grpcCredentials.createFromMetadataGenerator((_params, callback) => {
      const metadata = new Metadata();
      metadata.set(authorizationHeader, header);
      callback(null, metadata);
    });
    credentials = grpcCredentials.combineChannelCredentials(credentials, callCredentials);
  }
  const options: ChannelOptions =
    tls.serverName === undefined
      ? reconnectOptions
      : {
          ...reconnectOptions,
          'grpc.ssl_target_name_override': tls.serverName,
          'grpc.default_authority': tls.serverName,
        };
  return { credentials, options };
}

/** Reads the files named in `files`; a missing file is an error naming it. */
export function loadClientSecurity(files: ClientSecurityFiles): ClientSecurity {
  const read = (what: string, file: string): Buffer => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      throw new Error(`${what} ${file}: ${(err as Error).message}`, { cause: err });
    }
  };
  const anyTls = files.caFile ?? files.certFile ?? files.keyFile ?? files.serverName;
  return {
    ...(anyTls !== undefined
      ? {
          tls: {
            ...(files.caFile !== undefined ? { ca: read('CA', files.caFile) } : {}),
            ...(files.certFile !== undefined ? { cert: read('certificate', files.certFile) } : {}),
            ...(files.keyFile !== undefined ? { key: read('key', files.keyFile) } : {}),
            ...(files.serverName !== undefined ? { serverName: files.serverName } : {}),
          },
        }
      : {}),
    ...(files.tokenFile !== undefined
      ? { token: read('token', files.tokenFile).toString('utf8').trim() }
      : {}),
  };
}
