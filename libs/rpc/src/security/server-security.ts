import fs from 'node:fs';
import tls from 'node:tls';
import { ServerCredentials, type ServerInterceptor } from '@grpc/grpc-js';
import type { ServerSecuritySettings } from '@pserver/config';
import type { Logger } from '@pserver/logging';
import { loadAccessConfig } from './access-config';
import { accessCheck, accessInterceptor, type AccessCheck } from './access-interceptor';
import { Authenticator } from './authenticator';

/** What a server binds with and runs around every call, from `ServerSecuritySettings`. */
export interface ServerSecurity {
  credentials: ServerCredentials;
  /** The access check, when callers must identify themselves; put it first. */
  interceptors: ServerInterceptor[];
  /** The same check, for calls served without grpc-js (`createGrpcServer`'s `direct`). */
  access: AccessCheck | undefined;
  /** One line for the start log, e.g. "mutual TLS; roles from certificates and tokens". */
  description: string;
  /** What leaves this server open, said at start (SECURITY.md). */
  warnings: string[];
}

export class SecuritySettingsError extends Error {
  override readonly name = 'SecuritySettingsError';
}

/**
 * Reads the certificate, key, client CA and access config named by `settings`, checks that they
 * fit together, and says what stays open on `host`. Every problem is a `SecuritySettingsError`
 * naming the flag and file, so a misconfigured server never starts.
 */
export function loadServerSecurity(
  settings: ServerSecuritySettings,
  host: string,
  logger: Logger,
): ServerSecurity {
  const access = settings.authConfigFile ? loadAccessConfig(settings.authConfigFile) : undefined;
  const clientCa = settings.tls?.clientCaFile;
  let credentials = ServerCredentials.createInsecure();
  if (settings.tls) {
    const cert = readPem('--tls-cert', settings.tls.certFile);
    const key = readPem('--tls-key', settings.tls.keyFile);
    const ca = clientCa === undefined ? null : readPem('--tls-client-ca', clientCa);
    try {
      tls.createSecureContext({ cert, key, ...(ca ? { ca } : {}) });
    } catch (err) {
      throw new SecuritySettingsError(
        `--tls-cert ${settings.tls.certFile}, --tls-key ${settings.tls.keyFile}: ${(err as Error).message}`,
      );
    }
    credentials = ServerCredentials.createSsl(
      ca,
      [{ cert_chain: cert, private_key: key }],
      ca !== null,
    );
  }
  if (access && access.tokens.length > 0 && !settings.tls) {
    throw new SecuritySettingsError(
      `--auth-config ${settings.authConfigFile}: bearer tokens need --tls-cert and --tls-key ` +
        '(a token sent in plaintext can be read and replayed by anyone on the path)',
    );
  }
  const authenticates = access !== undefined || clientCa !== undefined;
  const warnings: string[] = [];
  if (!isLoopback(host) && !settings.tls) {
    warnings.push(
      `serving PLAINTEXT on ${host}: anyone on the network can read and alter every call, ` +
        'parameters included; give --tls-cert and --tls-key (SECURITY.md)',
    );
  }
  if (!isLoopback(host) && !authenticates) {
    warnings.push(
      `NO AUTHENTICATION on ${host}: anyone who can reach the port may push, read and administer; ` +
        'give --tls-client-ca or --auth-config (SECURITY.md)',
    );
  }
  if (access && access.certificateRules.length > 0 && clientCa === undefined) {
    warnings.push(
      `--auth-config ${settings.authConfigFile}: its clientCertificates rules never match ` +
        'without --tls-client-ca',
    );
  }
  const sources = [
    ...(clientCa !== undefined ? [access ? 'certificate rules' : 'certificates (all admin)'] : []),
    ...(access && access.tokens.length > 0 ? ['tokens'] : []),
  ];
  const transport = !settings.tls ? 'plaintext' : clientCa === undefined ? 'TLS' : 'mutual TLS';
  const check = authenticates
    ? accessCheck(new Authenticator(access), logger.child({ component: 'access' }))
    : undefined;
  return {
    credentials,
    interceptors: check ? [accessInterceptor(check)] : [],
    access: check,
    description: authenticates
      ? `${transport}; roles from ${sources.join(' and ') || 'nothing (every call is refused)'}`
      : `${transport}; no authentication (every caller is admin)`,
    warnings,
  };
}

function readPem(flag: string, file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new SecuritySettingsError(`${flag} ${file}: ${(err as Error).message}`);
  }
}

/** Whether only this machine can reach `host`. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare);
}
