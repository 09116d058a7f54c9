import type { Etcd3, Watcher } from 'etcd3';
import {
  EtcdAuth,
  generateCertificates,
  sleep,
  startEtcd,
  waitFor,
  type EtcdJobUsers,
  type EtcdServer,
} from '@pserver/testing';
import { connectEtcd, JobKeys } from '../src';

// connectEtcd with an etcd user (tools/etcd/auth.sh's roles), against an etcd that forgets a
// token after two idle seconds, and every token when it restarts. etcd3 itself renews a token
// for unary calls only; these tests fail without watchTokenRenewal.
const tokenTtlSeconds = 2;
/** Long enough for etcd to drop an idle token (it checks every second). */
const idleMs = (tokenTtlSeconds + 2.5) * 1000;

let etcd: EtcdServer;
let users: EtcdJobUsers;
const keys = new JobKeys('token-job');
const clients: Etcd3[] = [];
const watchers: Watcher[] = [];

beforeAll(async () => {
  const certs = generateCertificates();
  etcd = await startEtcd({
    tls: { ca: certs.ca, server: certs.server },
    authTokenTtlSeconds: tokenTtlSeconds,
  });
  users = await (await EtcdAuth.enable(etcd)).createJobUsers(keys.job);
});

afterAll(async () => {
  await Promise.all(watchers.map((w) => w.cancel().catch(() => undefined)));
  for (const client of clients) client.close();
  await etcd?.stop();
});

function connect(as: 'master' | 'pserver'): Etcd3 {
  const client = connectEtcd({ endpoints: [etcd.endpoint], security: users[as].security });
  clients.push(client);
  return client;
}

/** Watches `assign/` as the pserver's user; collects the keys put, and any error. */
async function watchAssignments(
  client: Etcd3,
): Promise<{ puts: string[]; errors: unknown[]; watcher: Watcher }> {
  const watcher = await client.watch().prefix(keys.assignPrefix).create();
  watchers.push(watcher);
  const seen = { puts: [] as string[], errors: [] as unknown[], watcher };
  watcher.on('put', (kv) => seen.puts.push(kv.key.toString()));
  watcher.on('error', (err) => seen.errors.push(err));
  return seen;
}

/** How many times etcd has refused an expired or unknown token so far. */
const refusedTokens = (): number =>
  etcd.process.jsonLines().filter((e) => e.msg === 'invalid auth token').length;

describe('an etcd user’s token dropped by etcd', () => {
  it('a unary call after the token expired: etcd3 authenticates again', async () => {
    const client = connect('pserver');
    expect(await client.get(keys.desired).string()).toBeNull();
    const refusedBefore = refusedTokens();
    await sleep(idleMs);
    expect(await client.get(keys.desired).string()).toBeNull();
    expect(refusedTokens()).toBeGreaterThan(refusedBefore);
  });

  it('a watch created after the token expired, and another on the stream after that, both see every put once', async () => {
    const reader = connect('pserver');
    const writer = connect('master');
    expect(await reader.get(keys.desired).string()).toBeNull();
    await sleep(idleMs);
    // Its stream starts with the token etcd dropped: refused, renewed, created again.
    const first = await watchAssignments(reader);
    await writer.put(keys.assign(0)).value('{}');
    await waitFor(() => first.puts.length === 1, { timeoutMs: 20_000, description: 'the put' });
    // The stream lives on with the first token, which expires in turn: a new watch on it.
    await sleep(idleMs);
    const second = await watchAssignments(reader);
    await writer.put(keys.assign(1)).value('{}');
    await waitFor(() => first.puts.length === 2 && second.puts.length === 1, {
      timeoutMs: 20_000,
      description: 'both watches see the second put',
    });
    expect(first.puts).toEqual([keys.assign(0), keys.assign(1)]);
    expect(second.puts).toEqual([keys.assign(1)]);
    expect([...first.errors, ...second.errors]).toEqual([]);
  });

  it('a watch across an etcd restart, which forgets every token, sees the puts after it', async () => {
    const reader = connect('pserver');
    const writer = connect('master');
    const watched = await watchAssignments(reader);
    await writer.put(keys.assign(2)).value('{}');
    await waitFor(() => watched.puts.length === 1, { timeoutMs: 20_000 });
    await etcd.restart();
    await writer.put(keys.assign(3)).value('{}');
    await waitFor(() => watched.puts.length === 2, {
      timeoutMs: 30_000,
      description: 'the put after the restart',
    });
    expect(watched.puts).toEqual([keys.assign(2), keys.assign(3)]);
    expect(watched.errors).toEqual([]);
    // And a new watch on the same client.
    const later = await watchAssignments(reader);
    await writer.put(keys.assign(4)).value('{}');
    await waitFor(() => later.puts.length === 1, { timeoutMs: 20_000 });
  });
});
