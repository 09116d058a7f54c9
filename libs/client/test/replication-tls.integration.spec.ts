import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { channelSecurity, loadClientSecurity, replicationClient } from '@pserver/rpc';
import {
  generateCertificates,
  LocalCluster,
  stopAllProcesses,
  waitFor,
  type ClusterCertificates,
} from '@pserver/testing';
import { connect, type PserverClient } from '../src';

afterAll(() => stopAllProcesses());

// A job with one shard and one replica under mutual TLS: the pservers dial each other with their
// own (server) certificate, which the auth config maps to the `pserver` role; trainers hold
// trainer certificates. Replication works over it, and a trainer may not call it.
describe('replication under mutual TLS', () => {
  let certs: ClusterCertificates;
  let cluster: LocalCluster;
  let client: PserverClient;
  const steps = 20;

  beforeAll(async () => {
    certs = generateCertificates();
    const authConfig = path.join(certs.dir, 'auth.json');
    fs.writeFileSync(
      authConfig,
      JSON.stringify({
        clientCertificates: [
          { ou: 'trainers', role: 'trainer' },
          { cn: 'server', role: 'pserver' },
        ],
      }),
    );
    const serverArgs = [
      ...['--tls-cert', certs.server.cert, '--tls-key', certs.server.key],
      ...['--tls-client-ca', certs.ca, '--auth-config', authConfig],
    ];
    cluster = await LocalCluster.start({
      pservers: 1,
      spares: 1,
      replicas: 1,
      masters: 1,
      leaseTtlSeconds: 2,
      extraMasterArgs: serverArgs,
      extraPserverArgs: serverArgs,
    });
    client = await connect({
      master: cluster.masterAddresses,
      tls: {
        ca: fs.readFileSync(certs.ca),
        cert: fs.readFileSync(certs.trainer.cert),
        key: fs.readFileSync(certs.trainer.key),
      },
    });
    await client.initParams({ w: new Float32Array(8) }, { sgd: {}, learningRate: { base: 1 } });
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await cluster?.stop();
  });

  const replica = () =>
    cluster.pservers.find(
      (p) => p.process.running && p.process.lastLog('in sync with the primary: promotable'),
    );

  it('keeps an in-sync replica, which a trainer certificate may not forward to', async () => {
    const follower = await waitFor(replica, {
      timeoutMs: 30_000,
      description: 'an in-sync replica',
    });
    for (let step = 0; step < steps; step++)
      await client.step((ctx) => ctx.sendGrads({ w: new Float32Array(8).fill(-1) }));

    const { credentials, options } = channelSecurity(
      loadClientSecurity({
        caFile: certs.ca,
        certFile: certs.trainer.cert,
        keyFile: certs.trainer.key,
      }),
    );
    const forged = replicationClient(follower.address, credentials, options);
    try {
      const stream = forged.ForwardStream();
      const refused = await new Promise<unknown>((resolve) => {
        stream.on('error', resolve);
        stream.on('data', () => resolve(undefined));
        stream.write({ forwards: [{ index: 0, primaryEpoch: 1, seq: 1, trainerId: 1, step: 1 }] });
      });
      expect(refused).toMatchObject({ code: status.PERMISSION_DENIED });
      expect((refused as Error).message).toMatch(/ForwardStream: trainer holds trainer/);
    } finally {
      forged.close();
    }
  });

  it('promotes the replica when the primary is killed: every acknowledged push is there', async () => {
    const primary = cluster.pserverServing(0);
    const follower = replica()!;
    await primary.process.kill();
    await waitFor(() => follower.process.lastLog('serving'), {
      timeoutMs: 30_000,
      description: 'the replica serving',
    });
    expect(follower.process.lastLog('serving')?.promoted).toBeDefined();
    const { w } = await client.getParams(['w']);
    expect([...w]).toEqual(new Array(8).fill(steps));
  });
});
