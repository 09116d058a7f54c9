import type {
  MasterClient,
  SetDesiredShardsRequest,
  SetDesiredShardsResponse__Output,
} from '@pserver/proto';
import {
  backoffPolicies,
  callUnary,
  channelSecurity,
  masterClient,
  retry,
  RetryDeadlineError,
} from '@pserver/rpc';

/** How long one master has to answer, and how long the demo keeps asking. */
const callTimeoutMs = 5_000;
const askTimeoutMs = 30_000;

/**
 * Sets the job's shard count, as `pserverctl shards <count>` does (without its wait): asks the
 * masters in turn, the leader first, until one takes it. A follower refuses; a master that has
 * just lost its lease, or a leader whose term is changing, answers "ask again". Resolves with the
 * address of the master that took it, and its answer.
 */
export async function askShardCount(
  /** The running masters' addresses, the leader first; read again before every attempt. */
  masters: () => string[],
  count: number,
): Promise<{ master: string; answer: SetDesiredShardsResponse__Output }> {
  const { credentials, options } = channelSecurity({});
  const clients = new Map<string, MasterClient>();
  const clientOf = (address: string): MasterClient => {
    let client = clients.get(address);
    if (!client) {
      client = masterClient(address, credentials, options);
      clients.set(address, client);
    }
    return client;
  };
  try {
    return await retry(
      async (attempt) => {
        const addresses = masters();
        const master = addresses[(attempt - 1) % Math.max(1, addresses.length)];
        if (master === undefined) throw new Error('no master is running');
        const client = clientOf(master);
        const answer = await callUnary<SetDesiredShardsRequest, SetDesiredShardsResponse__Output>(
          client.setDesiredShards.bind(client),
          { shardCount: count },
          { timeoutMs: callTimeoutMs },
        );
        return { master, answer };
      },
      { policy: backoffPolicies.masterFailover, timeoutMs: askTimeoutMs },
    );
  } catch (err) {
    // The deadline's error says only that time ran out: the last master's answer says why.
    const why = err instanceof RetryDeadlineError ? err.cause : err;
    throw new Error(
      `no master took the shard count ${count} within ${askTimeoutMs / 1000} s: ${why instanceof Error ? why.message : String(why)}`,
      { cause: err },
    );
  } finally {
    for (const client of clients.values()) client.close();
  }
}
