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

/**
 * With several members, how long a member that failed one call is skipped. etcd3 sends each call
 * to a member drawn at random: a member cut off (or on the minority side of a split) would time
 * out one call in every few; the other members answer meanwhile, and one call tries the member
 * again after this.
 */
const memberRetryAfterMs = 2_000;

/**
 * Keepalive pings on etcd's connections: a watch on a member that went silent (cut off, or a
 * black-holed route) would otherwise wait for events forever; with pings its stream fails within
 * 8 s and etcd3 watches again through another member. etcd refuses pings more often than every
 * 5 s (`--grpc-keepalive-min-time`), hence 6 s.
 */
const etcdKeepalive = { 'grpc.keepalive_time_ms': 6_000, 'grpc.keepalive_timeout_ms': 2_000 };

/**
 * An etcd client that also holds one client per member when there are several: lease keep-alives
 * go to one member at a time and move to the next when one fails (`LeaseKeeper`), where etcd3
 * alone would draw a member at random for each and, with one member cut off, fail one in three.
 */
export class EtcdWithMembers extends Etcd3 {
  constructor(
    options: IOptions,
    /** A client of each member, in `--etcd-endpoints` order; empty with one member. */
    readonly members: Etcd3[],
  ) {
    super(options);
  }

  override close(): void {
    for (const member of this.members) member.close();
    super.close();
  }
}

/** The per-member clients of `client` (see EtcdWithMembers); empty for one member or another client. */
export function etcdMembers(client: Etcd3): Etcd3[] {
  return client instanceof EtcdWithMembers ? client.members : [];
}

/** Read (by anyone or no one: a refusal is an answer too) to make etcd3 renew its auth token. */
const tokenRenewalKey = '/';

/**
 * An etcd client with a deadline on every unary call. The client retries UNAVAILABLE and
 * DEADLINE_EXCEEDED up to three times, so a write that failed may have committed: every write in
 * this library is a guarded transaction whose outcome is read back when it is unclear. With an
 * etcd user, its watches survive etcd dropping the user's token (`watchTokenRenewal`).
 */
export function connectEtcd(options: Partial<EtcdOptions> & { endpoints: string[] }): Etcd3 {
  const { endpoints } = options;
  const members =
    endpoints.length > 1
      ? endpoints.map((endpoint) => made((o) => new Etcd3(o), [endpoint], options))
      : [];
  return made((o) => new EtcdWithMembers(o, members), endpoints, options);
}

/** `make(etcd3's options for endpoints)`: the client made renews its own auth token. */
function made<T extends Etcd3>(
  make: (options: IOptions) => T,
  endpoints: string[],
  options: Partial<EtcdOptions>,
): T {
  const { callTimeoutMs, dialTimeoutMs, security } = { ...defaultEtcdOptions, ...options };
  const credentials = security ? etcdCredentials(security, endpoints) : {};
  const renewToken = (): Promise<unknown> => client.get(tokenRenewalKey).exec();
  const client: T = make({
    hosts: endpoints,
    dialTimeout: dialTimeoutMs,
    // etcd3 stops calling a host for 5 s after 3 failed calls in a row: after an etcd blip, that
    // would block lease keep-alives long enough to cost every process its lease. A host that
    // failed is tried again after 250 ms instead (one call, then all once it answers); of
    // several members, one that failed a call is skipped for 2 s while the others answer.
    faultHandling: {
      host: () =>
        circuitBreaker(
          handleWhen(isRecoverableError),
          endpoints.length > 1
            ? { halfOpenAfter: memberRetryAfterMs, breaker: new ConsecutiveBreaker(1) }
            : { halfOpenAfter: hostRetryAfterMs, breaker: new ConsecutiveBreaker(3) },
        ),
    },
    defaultCallOptions: (context) =>
      context.isStream ? {} : { deadline: Date.now() + callTimeoutMs },
    ...credentials,
    // etcd3 hands grpcOptions to each grpc-js client it makes, interceptors included.
    grpcOptions: {
      ...etcdKeepalive,
      ...(credentials.auth ? { interceptors: [watchTokenRenewal(renewToken)] } : {}),
    },
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
