import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { connect } from '@pserver/client';
import { connectEtcd, JobKeys, type EtcdClient } from '@pserver/coordination';
import { placeTensor } from '@pserver/proto';
import { loadClientSecurity, RpcError, type ClientSecurity } from '@pserver/rpc';
import {
  generateCertificates,
  LocalCluster,
  MasterDriver,
  stopAllProcesses,
  type ClusterCertificates,
} from '@pserver/testing';

afterAll(stopAllProcesses);

function rejection(promise: Promise<unknown>): Promise<RpcError> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (err: unknown) => {
      if (!(err instanceof RpcError)) throw err;
      return err;
    },
  );
}

describe('a job whose masters and pservers all require mutual TLS and roles', () => {
  let certs: ClusterCertificates;
  let token: string;
  let cluster: LocalCluster;
  let etcd: EtcdClient;
  let keys: JobKeys;
  const drivers: MasterDriver[] = [];
  const master = (security: ClientSecurity): MasterDriver => {
    const driver = new MasterDriver(cluster.masterAddresses[0]!, 10_000, security);
    drivers.push(driver);
    return driver;
  };
  const withCertificate = (pair: { cert: string; key: string }): ClientSecurity =>
    loadClientSecurity({ caFile: certs.ca, certFile: pair.cert, keyFile: pair.key });

  beforeAll(async () => {
    certs = generateCertificates();
    token = execFileSync('openssl', ['rand', '-hex', '32']).toString().trim();
    fs.writeFileSync(path.join(certs.dir, 'trainer.token'), token, { mode: 0o600 });
    const authConfig = path.join(certs.dir, 'auth.json');
    fs.writeFileSync(
      authConfig,
      JSON.stringify({
        clientCertificates: [
          { ou: 'trainers', role: 'trainer' },
          { ou: 'admins', role: 'admin' },
        ],
        tokens: [{ name: 'ci-trainers', file: 'trainer.token', role: 'trainer' }],
      }),
    );
    const serverArgs = [
      '--tls-cert',
      certs.server.cert,
      '--tls-key',
      certs.server.key,
      '--tls-client-ca',
      certs.ca,
      '--auth-config',
      authConfig,
    ];
    cluster = await LocalCluster.start({
      pservers: 2,
      masters: 1,
      leaseTtlSeconds: 2,
      sessionTtlSeconds: 3,
      blockSize: 2,
      extraPserverArgs: serverArgs,
      extraMasterArgs: serverArgs,
    });
    etcd = connectEtcd({ endpoints: [cluster.etcd.endpoint] });
    keys = new JobKeys(cluster.options.job);
  });

  afterAll(async () => {
    for (const driver of drivers) driver.close();
    etcd?.close();
    await cluster?.stop();
  });

  it('refuses a trainer without a certificate or token, UNAUTHENTICATED', async () => {
    const error = await rejection(master(loadClientSecurity({ caFile: certs.ca })).status());
    expect(error.status).toBe(status.UNAUTHENTICATED);
    expect(error.code).toBe('AUTH_UNAUTHENTICATED');
  });

  it('lets a trainer certificate register, but not change the shard count', async () => {
    const trainer = master(withCertificate(certs.trainer));
    const registered = await trainer.registerTrainer('t-cert');
    expect(registered.trainerId).toBeGreaterThan(0);
    const desiredBefore = await etcd.get(keys.desired).string();
    const error = await rejection(trainer.setDesiredShards(3));
    expect(error.status).toBe(status.PERMISSION_DENIED);
    expect(error.message).toMatch(
      /SetDesiredShards: trainer holds trainer; this method needs admin/,
    );
    expect(await etcd.get(keys.desired).string()).toBe(desiredBefore);
  });

  it('lets an admin certificate change the shard count', async () => {
    await master(withCertificate(certs.admin)).setDesiredShards(3);
    expect(await etcd.get(keys.desired).string()).toBe('3');
    await master(withCertificate(certs.admin)).setDesiredShards(2);
  });

  it('trains through the client with a token over TLS: master, both shards, exactly once', async () => {
    const client = await connect({
      master: cluster.masterAddresses,
      tls: { ca: fs.readFileSync(certs.ca) },
      token,
    });
    try {
      // Block size 2: the two blocks of `weights` live on shards 1 and 0 (placement rule).
      expect(placeTensor('weights', 4, 2, 2).map((block) => block.shard)).toEqual([1, 0]);
      await client.initParams(
        { weights: new Float32Array([1, 2, 3, 4]) },
        { sgd: {}, learningRate: { base: 1 } },
      );
      await client.step(async (ctx) => {
        await ctx.sendGrads({ weights: new Float32Array([1, 1, 1, 1]) });
      });
      const { weights } = await client.getParams(['weights'], Float32Array);
      expect([...weights]).toEqual([0, 1, 2, 3]);
    } finally {
      await client.close();
    }
  });
});
