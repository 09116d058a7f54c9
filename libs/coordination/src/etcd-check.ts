import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import {
  EtcdAuthenticationFailedError,
  EtcdPermissionDeniedError,
  GRPCFailedPreconditionError,
  GRPCInvalidArgumentError,
  type Etcd3,
} from 'etcd3';
import type { EtcdSecuritySettings } from '@pserver/config';

export type EtcdConnectionErrorCode =
  /** Nothing answers at the endpoints. */
  | 'ETCD_UNREACHABLE'
  /** TLS between this process and etcd fails: CA, certificate, name, or http/https mismatch. */
  | 'ETCD_TLS'
  /** etcd refuses the user: wrong password, unknown user, no user where one is needed. */
  | 'ETCD_AUTHENTICATION'
  /** The user is known but may not read the job's keys. */
  | 'ETCD_PERMISSION';

/** etcd cannot be used as configured; the message names the endpoint, the flag and the file. */
export class EtcdConnectionError extends Error {
  override readonly name = 'EtcdConnectionError';

  constructor(
    readonly code: EtcdConnectionErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface EtcdCheckOptions {
  endpoints: string[];
  security?: EtcdSecuritySettings;
  /** A key the process must be able to read (e.g. the job's `config/desired`). */
  probeKey: string;
  /** Deadline of the read. */
  timeoutMs: number;
}

/**
 * One linearizable read of `probeKey` with a deadline. It goes through etcd3's authentication
 * first, so a wrong password, a missing or wrong certificate, a plaintext endpoint to a TLS etcd
 * or a role without the job's keys fails here, as an EtcdConnectionError that says which, instead
 * of a bare `14 UNAVAILABLE: No connection established` from whatever call comes first.
 */
export async function checkEtcd(client: Etcd3, options: EtcdCheckOptions): Promise<void> {
  const { probeKey, timeoutMs } = options;
  try {
    await client
      .get(probeKey)
      .options({ deadline: Date.now() + timeoutMs })
      .exec();
  } catch (err) {
    throw await explain(err, options);
  }
}

async function explain(err: unknown, options: EtcdCheckOptions): Promise<EtcdConnectionError> {
  const { endpoints, security, probeKey, timeoutMs } = options;
  const said = err instanceof Error ? err.message : String(err);
  const user =
    security?.username !== undefined
      ? `user ${security.username} (--etcd-user)`
      : security?.certFile !== undefined
        ? `the user named by the CN of --etcd-cert ${security.certFile}`
        : 'a client without a user';
  if (err instanceof EtcdAuthenticationFailedError) {
    return new EtcdConnectionError(
      'ETCD_AUTHENTICATION',
      `etcd at ${endpoints.join(', ')} refused ${user} with the password in ` +
        `--etcd-password-file ${security?.passwordFile ?? '(none)'}: ${said}`,
    );
  }
  if (err instanceof EtcdPermissionDeniedError) {
    return new EtcdConnectionError(
      'ETCD_PERMISSION',
      `etcd denies ${user} reading ${probeKey}: give it the role of its process (SECURITY.md, "etcd"): ${said}`,
    );
  }
  if (err instanceof GRPCInvalidArgumentError || err instanceof GRPCFailedPreconditionError) {
    // etcd answers these when authentication is on and no user came ("user name is empty"), or
    // when a user came and authentication is off ("authentication is not enabled").
    const hint =
      security?.username === undefined
        ? 'if etcd has authentication on, give --etcd-user and --etcd-password-file'
        : 'if etcd has authentication off, drop --etcd-user and --etcd-password-file';
    return new EtcdConnectionError(
      'ETCD_AUTHENTICATION',
      `etcd at ${endpoints.join(', ')} refused ${user}: ${said} (${hint})`,
    );
  }
  const reasons = (
    await Promise.all(endpoints.map((endpoint) => probeTls(endpoint, security, timeoutMs)))
  ).filter((reason) => reason !== undefined);
  if (reasons.length > 0) {
    const code = reasons.every((r) => r.code === 'ETCD_UNREACHABLE')
      ? 'ETCD_UNREACHABLE'
      : 'ETCD_TLS';
    // grpc-js's own words ("No connection established") add nothing to these.
    return new EtcdConnectionError(code, reasons.map((r) => r.message).join('; '));
  }
  return new EtcdConnectionError(
    'ETCD_UNREACHABLE',
    `etcd at ${endpoints.join(', ')} failed a read of ${probeKey} (deadline ${timeoutMs} ms): ${said}`,
  );
}

interface Reason {
  code: EtcdConnectionErrorCode;
  message: string;
}

/**
 * Why a TLS connection to `endpoint` fails, found with a handshake of our own (grpc-js reports
 * every TLS failure as "No connection established"). For a plaintext endpoint: whether the
 * server speaks TLS. Undefined when nothing is wrong at this level.
 */
function probeTls(
  endpoint: string,
  security: EtcdSecuritySettings | undefined,
  timeoutMs: number,
): Promise<Reason | undefined> {
  const url = new URL(/^[a-z]+:\/\//.test(endpoint) ? endpoint : `http://${endpoint}`);
  const secure = url.protocol === 'https:';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(url.port || 2379);
  const read = (file: string | undefined): Buffer | undefined => {
    try {
      return file === undefined ? undefined : fs.readFileSync(file);
    } catch {
      return undefined; // connectEtcd read these already; a file gone since is not this probe's to report
    }
  };
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port,
      servername: net.isIP(host) ? undefined : host,
      ALPNProtocols: ['h2'],
      // For a plaintext endpoint the question is only whether the server speaks TLS.
      rejectUnauthorized: secure,
      ...(secure
        ? {
            ca: read(security?.caFile),
            cert: read(security?.certFile),
            key: read(security?.keyFile),
          }
        : {}),
    });
    let settled = false;
    const finish = (reason: Reason | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(reason);
    };
    const timer = setTimeout(
      () =>
        finish({
          code: 'ETCD_UNREACHABLE',
          message: `etcd at ${endpoint} did not complete a TLS handshake within ${timeoutMs} ms`,
        }),
      timeoutMs,
    );
    socket.on('secureConnect', () => {
      if (!secure) {
        finish({
          code: 'ETCD_TLS',
          message: `etcd at ${endpoint} serves TLS: use an https:// endpoint and --etcd-ca (with --etcd-cert and --etcd-key when etcd checks client certificates)`,
        });
        return;
      }
      // With TLS 1.3 the server checks the client certificate after the handshake: its refusal
      // arrives as an alert right after, read as an error.
      socket.resume();
      setTimeout(() => finish(undefined), Math.min(500, timeoutMs)).unref();
    });
    socket.on('error', (err: NodeJS.ErrnoException) =>
      finish(classify(err, endpoint, secure, security)),
    );
  });
}

function classify(
  err: NodeJS.ErrnoException,
  endpoint: string,
  secure: boolean,
  security: EtcdSecuritySettings | undefined,
): Reason | undefined {
  const code = err.code ?? '';
  const tlsError = (message: string): Reason => ({
    code: 'ETCD_TLS',
    message: `${message} (${code || err.message})`,
  });
  if (['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(code)) {
    return { code: 'ETCD_UNREACHABLE', message: `cannot reach etcd at ${endpoint} (${code})` };
  }
  // A plaintext endpoint whose server does not speak TLS: TLS is not the problem.
  if (!secure) return undefined;
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG') {
    return tlsError(
      `etcd at ${endpoint} does not serve TLS: use an http:// endpoint without --etcd-ca, or start etcd with TLS`,
    );
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return tlsError(
      `etcd's certificate at ${endpoint} does not name its host: dial a name or address its certificate carries`,
    );
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    return tlsError(`etcd's certificate at ${endpoint} is not valid now`);
  }
  if (/CERT|ISSUER|SIGNATURE/.test(code) && !code.startsWith('ERR_SSL')) {
    return tlsError(
      security?.caFile === undefined
        ? `etcd's certificate at ${endpoint} is not signed by a CA this process trusts: give --etcd-ca`
        : `etcd's certificate at ${endpoint} is not signed by the CA in --etcd-ca ${security.caFile}`,
    );
  }
  if (code.includes('ALERT')) {
    return tlsError(
      security?.certFile === undefined
        ? `etcd at ${endpoint} refused the connection without a client certificate: give --etcd-cert and --etcd-key`
        : `etcd at ${endpoint} refused the client certificate --etcd-cert ${security.certFile}: it must be signed by the CA etcd trusts (--trusted-ca-file) and allow clientAuth`,
    );
  }
  return tlsError(`TLS to etcd at ${endpoint} failed: ${err.message}`);
}
