import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import {
  freePort,
  generateCertificates,
  LocalCluster,
  startPserverProcess,
  stopAllProcesses,
  type ClusterCertificates,
  type PserverProcess,
} from '@pserver/testing';
import { connect, isRefused, RpcError } from '../src';

afterAll(() => stopAllProcesses());

// Servers that take one bearer token (over TLS); the client sends another. A refusal is raised
// at once — never waited out as "no complete cluster view" until the step's deadline.
let certs: ClusterCertificates;
let serverArgs: string[];

beforeAll(() => {
  certs = generateCertificates();
  fs.writeFileSync(path.join(certs.dir, 'trainer.token'), 'the-right-token-0123456789abcdef', {
    mode: 0o600,
  });
  const authConfig = path.join(certs.dir, 'auth.json');
  fs.writeFileSync(
    authConfig,
    JSON.stringify({ tokens: [{ name: 'trainers', file: 'trainer.token', role: 'trainer' }] }),
  );
  serverArgs = [
    '--tls-cert',
    certs.server.cert,
    '--tls-key',
    certs.server.key,
    '--auth-config',
    authConfig,
  ];
});

const wrongToken = () => ({
  tls: { ca: fs.readFileSync(certs.ca) },
  token: 'a-wrong-token-0123456789abcdef',
});

async function refusal(promise: Promise<unknown>): Promise<RpcError> {
  const failure = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(failure).toBeInstanceOf(RpcError);
  expect(isRefused(failure)).toBe(true);
  return failure as RpcError;
}

describe('a client with a wrong token', () => {
  it('standalone: the view connect refreshes from the pservers is refused, and raised at once', async () => {
    const port = await freePort();
    const pserver: PserverProcess = await startPserverProcess(
      ['--port', String(port), '--index', '0', '--shards', '1', ...serverArgs],
      { name: 'refusing-pserver' },
    );
    try {
      const started = performance.now();
      const error = await refusal(
        connect({ pservers: [`localhost:${port}`], stepTimeoutMs: 60_000, ...wrongToken() }),
      );
      expect(error.status).toBe(status.UNAUTHENTICATED);
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      await pserver.process.stop();
    }
  });

  it('cluster: the master refuses it at connect, at once', async () => {
    const cluster = await LocalCluster.start({
      pservers: 1,
      masters: 1,
      leaseTtlSeconds: 2,
      extraMasterArgs: serverArgs,
      extraPserverArgs: serverArgs,
    });
    try {
      const started = performance.now();
      const error = await refusal(
        connect({
          master: cluster.masterAddresses.map((a) => a.replace('127.0.0.1', 'localhost')),
          ...wrongToken(),
        }),
      );
      expect(error.status).toBe(status.UNAUTHENTICATED);
      expect(performance.now() - started).toBeLessThan(10_000);
    } finally {
      await cluster.stop();
    }
  });
});
