import { Etcd3, type IOptions } from 'etcd3';

export interface EtcdOptions {
  endpoints: string[];
  /** Deadline of each unary etcd call. */
  callTimeoutMs: number;
  dialTimeoutMs: number;
}

export const defaultEtcdOptions: Omit<EtcdOptions, 'endpoints'> = {
  callTimeoutMs: 5_000,
  dialTimeoutMs: 3_000,
};

/**
 * An etcd client with a deadline on every unary call. The client retries UNAVAILABLE and
 * DEADLINE_EXCEEDED up to three times, so a write that failed may have committed: every write in
 * this library is a guarded transaction whose outcome is read back when it is unclear.
 */
export function connectEtcd(options: Partial<EtcdOptions> & { endpoints: string[] }): Etcd3 {
  const { endpoints, callTimeoutMs, dialTimeoutMs } = { ...defaultEtcdOptions, ...options };
  const config: IOptions = {
    hosts: endpoints,
    dialTimeout: dialTimeoutMs,
    defaultCallOptions: (context) =>
      context.isStream ? {} : { deadline: Date.now() + callTimeoutMs },
  };
  return new Etcd3(config);
}
