import fs from 'node:fs';
import { circuitBreaker, ConsecutiveBreaker, handleWhen } from 'cockatiel';
import { Etcd3, isRecoverableError, type IOptions } from 'etcd3';
import type { EtcdSecuritySettings } from '@pserver/config';
import { checkEtcd } from './etcd-check';
import { watchTokenRenewal } from './watch-token-renewal';

export interface EtcdOptions {
  endpoints: string[];
  /** Deadline of each unary etcd call. */
  callTimeoutMs: number;
  dialTimeoutMs: number;
  /** TLS and etcd user (SECURITY.md); files are read when connecting. */
  security?: EtcdSecuritySettings;
}

export const defaultEtcdOptions: Omit<EtcdOptions, 'endpoints'> = {
  callTimeoutMs: 5_000,
  dialTimeoutMs: 3_000,
};

/** How long etcd3 skips a host after failed calls (its default, 5 s, outlasts short leases). */
const hostRetryAfterMs = 250;

/** Read (by anyone or no one: a refusal is an answer too) to make etcd3 renew its auth token. */
const tokenRenewalKey = '/';

/**
 * An etcd client with a deadline on every unary call. The client retries UNAVAILABLE and
 * DEADLINE_EXCEEDED up to three times, so a write that failed may have committed: every write in
 * this library is a guarded transaction whose outcome is read back when it is unclear. With an
 * etcd user, its watches survive etcd dropping the user's token (`watchTokenRenewal`).
 */
export function connectEtcd(options: Partial<EtcdOptions> & { endpoints: string[] }): Etcd3 {
  const { endpoints, callTimeoutMs, dialTimeoutMs, security } = {
    ...defaultEtcdOptions,
    ...options,
  };
  const credentials = security ? etcdCredentials(security, endpoints) : {};
  const client: Etcd3 = new Etcd3({
    hosts: endpoints,
    dialTimeout: dialTimeoutMs,
    // etcd3 stops calling a host for 5 s after 3 failed calls in a row: after an etcd blip, that
    // would block lease keep-alives long enough to cost every process its lease. A host that
    // failed is tried again after 250 ms instead (one call, then all once it answers).
    faultHandling: {
      host: () =>
        circuitBreaker(handleWhen(isRecoverableError), {
          halfOpenAfter: hostRetryAfterMs,
          breaker: new ConsecutiveBreaker(3),
        }),
    },
    defaultCallOptions: (context) =>
      context.isStream ? {} : { deadline: Date.now() + callTimeoutMs },
    ...credentials,
    ...(credentials.auth
      ? {
          // etcd3 hands grpcOptions to each grpc-js client it makes, interceptors included.
          grpcOptions: {
            interceptors: [watchTokenRenewal(() => client.get(tokenRenewalKey).exec())],
          },
        }
      : {}),
  });
  return client;
}

/**
 * `connectEtcd`, then one read of `probeKey` (a key the process must be able to read) with the
 * call deadline: etcd that cannot be used as configured (unreachable, TLS, password, role) fails
 * here with an EtcdConnectionError naming the problem and the flag, and the client is closed.
 */
export async function openEtcd(
  options: Partial<EtcdOptions> & { endpoints: string[]; probeKey: string },
): Promise<Etcd3> {
  const client = connectEtcd(options);
  try {
    await checkEtcd(client, {
      endpoints: options.endpoints,
      security: options.security,
      probeKey: options.probeKey,
      timeoutMs: options.callTimeoutMs ?? defaultEtcdOptions.callTimeoutMs,
    });
    return client;
  } catch (err) {
    client.close();
    throw err;
  }
}

/** etcd3's `credentials` and `auth` from file paths; a problem names the flag and the file. */
function etcdCredentials(
  security: EtcdSecuritySettings,
  endpoints: string[],
): Pick<IOptions, 'credentials' | 'auth'> {
  const read = (flag: string, file: string): Buffer => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      throw new Error(`${flag} ${file}: ${(err as Error).message}`, { cause: err });
    }
  };
  const result: Pick<IOptions, 'credentials' | 'auth'> = {};
  const { caFile, certFile, keyFile, username, passwordFile } = security;
  if (caFile !== undefined || certFile !== undefined) {
    if (caFile === undefined)
      throw new Error('--etcd-cert needs --etcd-ca (the CA of etcd’s server)');
    const plain = endpoints.filter((endpoint) => !endpoint.startsWith('https://'));
    if (plain.length > 0)
      throw new Error(`--etcd-ca: TLS to etcd needs https:// endpoints, got ${plain.join(', ')}`);
    result.credentials = {
      rootCertificate: read('--etcd-ca', caFile),
      ...(certFile !== undefined && keyFile !== undefined
        ? { certChain: read('--etcd-cert', certFile), privateKey: read('--etcd-key', keyFile) }
        : {}),
    };
  }
  if (username !== undefined && passwordFile !== undefined) {
    result.auth = {
      username,
      password: read('--etcd-password-file', passwordFile).toString('utf8').trim(),
    };
  }
  return result;
}
