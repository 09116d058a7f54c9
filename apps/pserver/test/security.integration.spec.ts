import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { status } from '@grpc/grpc-js';
import type { RequestContext } from '@pserver/proto';
import { checkHealth, loadClientSecurity, RpcError, type ClientSecurity } from '@pserver/rpc';
import {
  appBundle,
  bytesOf,
  float32s,
  generateCertificates,
  PserverDriver,
  spawnNode,
  startPserverProcess,
  stopAllProcesses,
  tempDir,
  type ClusterCertificates,
  type PserverProcess,
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

const f32 = (values: number[]): Buffer => bytesOf(new Float32Array(values));

/**
 * Certificates, a trainer token, a viewer token and an auth config mapping OU=trainers and
 * OU=admins.
 */
function securityFiles(): {
  certs: ClusterCertificates;
  authConfig: string;
  token: string;
  viewerToken: string;
} {
  const certs = generateCertificates();
  const token = execFileSync('openssl', ['rand', '-hex', '32']).toString().trim();
  const viewerToken = execFileSync('openssl', ['rand', '-hex', '32']).toString().trim();
  fs.writeFileSync(path.join(certs.dir, 'trainer.token'), token + '\n', { mode: 0o600 });
  fs.writeFileSync(path.join(certs.dir, 'viewer.token'), viewerToken + '\n', { mode: 0o600 });
  const authConfig = path.join(certs.dir, 'auth.json');
  fs.writeFileSync(
    authConfig,
    JSON.stringify({
      clientCertificates: [
        { ou: 'trainers', role: 'trainer' },
        { ou: 'admins', role: 'admin' },
      ],
      tokens: [
        { name: 'ci-trainers', file: 'trainer.token', role: 'trainer' },
        { name: 'dashboards', file: 'viewer.token', role: 'viewer' },
      ],
    }),
  );
  return { certs, authConfig, token, viewerToken };
}

describe('a pserver with mutual TLS and roles', () => {
  let files: ReturnType<typeof securityFiles>;
  let pserver: PserverProcess;
  let context: RequestContext;
  const drivers: PserverDriver[] = [];
  const as = (security: ClientSecurity): PserverDriver => {
    const driver = new PserverDriver(pserver.address, { security, timeoutMs: 10_000 });
    drivers.push(driver);
    return driver;
  };
  const ca = (): ClientSecurity => loadClientSecurity({ caFile: files.certs.ca });
  const withCertificate = (pair: { cert: string; key: string }): ClientSecurity =>
    loadClientSecurity({ caFile: files.certs.ca, certFile: pair.cert, keyFile: pair.key });
  const trainer = (): PserverDriver => as(withCertificate(files.certs.trainer));
  /** Every byte the shard holds, as a trainer reads it. */
  const shardBytes = async (): Promise<string> => {
    const response = await trainer().getParams(context, ['w']);
    return Buffer.from(response.params[0]!.content).toString('hex');
  };
  const checkpointFiles = (): string[] =>
    fs.readdirSync(path.join(pserver.checkpointDir, 'shard-0')).sort();

  beforeAll(async () => {
    files = securityFiles();
    const { certs, authConfig } = files;
    pserver = await startPserverProcess([
      '--tls-cert',
      certs.server.cert,
      '--tls-key',
      certs.server.key,
      '--tls-client-ca',
      certs.ca,
      '--auth-config',
      authConfig,
    ]);
    context = { trainerId: 7, shardEpoch: await trainer().epoch() };
  });

  afterAll(async () => {
    for (const driver of drivers) driver.close();
    await pserver?.process.stop();
  });

  it('says at start how it is protected', () => {
    expect(pserver.process.lastLog('security')?.grpc).toBe(
      'mutual TLS; roles from certificate rules and tokens',
    );
  });

  it('refuses a caller with neither certificate nor token, UNAUTHENTICATED, and changes nothing', async () => {
    const error = await rejection(
      as(ca()).initParam(context, {
        name: 'w',
        elementType: 'ELEMENT_TYPE_FLOAT32',
        content: f32([9, 9]),
      }),
    );
    expect(error.status).toBe(status.UNAUTHENTICATED);
    expect(error.code).toBe('AUTH_UNAUTHENTICATED');
    expect(error.message).toMatch(/InitParam: the call carries neither a client certificate/);
    expect((await trainer().status()).tensors).toEqual([]);
  });

  it('refuses a certificate signed by another CA', async () => {
    const error = await rejection(as(withCertificate(files.certs.outsider)).status());
    expect(error.status).toBe(status.UNAUTHENTICATED);
  });

  it('refuses a plaintext client at the transport', async () => {
    const error = await rejection(as({}).status(3_000));
    expect(error.status).toBe(status.UNAVAILABLE);
  });

  it('lets a trainer certificate initialize, push and pull', async () => {
    const driver = trainer();
    await driver.initParam(
      context,
      { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([1, 2]) },
      { sgd: {}, learningRate: { base: 1, constant: {} } },
    );
    await driver.finishInitParams(context);
    await driver.sendGrads({ ...context, step: 1 }, [
      { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([0.5, 0.5]) },
    ]);
    const response = await driver.getParams(context, ['w']);
    expect(float32s(response.params[0]!.content)).toEqual([0.5, 1.5]);
  });

  it('refuses pushes and pulls to a viewer, PERMISSION_DENIED, changing nothing', async () => {
    const before = await shardBytes();
    const viewer = as({ ...ca(), token: files.viewerToken });
    const refusals = await Promise.all([
      rejection(
        viewer.sendGrads({ ...context, trainerId: 11, step: 1 }, [
          { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([5, 5]) },
        ]),
      ),
      rejection(
        viewer.sendGradsStream([
          {
            context: { ...context, trainerId: 12, step: 1 },
            grads: [
              { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', offset: 0, content: f32([5, 5]) },
            ],
          },
        ]),
      ),
      rejection(viewer.getParams(context, ['w'])),
    ]);
    for (const error of refusals) {
      expect(error.status).toBe(status.PERMISSION_DENIED);
      expect(error.code).toBe('AUTH_PERMISSION_DENIED');
      expect(error.message).toMatch(/dashboards holds viewer; this method needs trainer or admin/);
    }
    expect(await viewer.status()).toMatchObject({ initialized: true });
    expect(await shardBytes()).toBe(before);
  });

  it('refuses SaveCheckpoint to a trainer, PERMISSION_DENIED, writing nothing', async () => {
    const before = checkpointFiles();
    const lastBefore = (await trainer().status()).lastCheckpoint;
    const error = await rejection(trainer().saveCheckpoint());
    expect(error.status).toBe(status.PERMISSION_DENIED);
    expect(error.code).toBe('AUTH_PERMISSION_DENIED');
    expect(error.message).toMatch(/SaveCheckpoint: trainer holds trainer; this method needs admin/);
    expect(checkpointFiles()).toEqual(before);
    expect((await trainer().status()).lastCheckpoint).toEqual(lastBefore);
  });

  it('lets an admin certificate save a checkpoint', async () => {
    const saved = await as(withCertificate(files.certs.admin)).saveCheckpoint();
    expect((await trainer().status()).lastCheckpoint?.uuid).toBe(saved.meta?.uuid);
    expect(checkpointFiles().some((file) => file.endsWith('.ckpt'))).toBe(true);
  });

  it('lets a token trainer over TLS push and pull, without a certificate', async () => {
    const driver = as({ ...ca(), token: files.token });
    await driver.sendGrads({ ...context, trainerId: 8, step: 1 }, [
      { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([0.5, 0.5]) },
    ]);
    expect(float32s((await driver.getParams(context, ['w'])).params[0]!.content)).toEqual([0, 1]);
  });

  it('refuses a wrong token, UNAUTHENTICATED, leaving every byte of the shard', async () => {
    const before = await shardBytes();
    const error = await rejection(
      as({ ...ca(), token: 'f'.repeat(64) }).sendGrads({ ...context, trainerId: 9, step: 1 }, [
        { name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', content: f32([1, 1]) },
      ]),
    );
    expect(error.status).toBe(status.UNAUTHENTICATED);
    expect(error.message).toMatch(/the bearer token is not one this server knows/);
    expect(await shardBytes()).toBe(before);
  });

  it('refuses a streamed push from a certificate of another CA, changing nothing', async () => {
    const before = await shardBytes();
    const error = await rejection(
      as(withCertificate(files.certs.outsider)).sendGradsStream([
        {
          context: { ...context, trainerId: 10, step: 1 },
          grads: [{ name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', offset: 0, content: f32([1]) }],
        },
        {
          grads: [{ name: 'w', elementType: 'ELEMENT_TYPE_FLOAT32', offset: 4, content: f32([1]) }],
        },
      ]),
    );
    expect(error.status).toBe(status.UNAUTHENTICATED);
    expect(await shardBytes()).toBe(before);
  });

  it('answers health checks without credentials (probes carry none)', async () => {
    await expect(checkHealth(pserver.address, '', 5_000, ca())).resolves.toBe('SERVING');
  });
});

describe('start-up checks of the security settings', () => {
  it('warns loudly when bound to a non-loopback address in plaintext and without authentication', async () => {
    const pserver = await startPserverProcess(['--host', '0.0.0.0']);
    const warnings = pserver.process
      .jsonLines()
      .filter((line) => line.level === 'warn')
      .map((line) => String(line.msg));
    await pserver.process.stop();
    expect(warnings).toEqual([
      expect.stringMatching(/^serving PLAINTEXT on 0\.0\.0\.0: anyone on the network/),
      expect.stringMatching(/^NO AUTHENTICATION on 0\.0\.0\.0: anyone who can reach the port/),
    ]);
  });

  it('stays quiet on loopback', async () => {
    const pserver = await startPserverProcess([]);
    const warnings = pserver.process.jsonLines().filter((line) => line.level === 'warn');
    await pserver.process.stop();
    expect(warnings).toEqual([]);
  });

  /** Starts a pserver that must refuse to start, and returns its fatal message. */
  async function refusal(args: string[]): Promise<string> {
    const child = spawnNode(
      appBundle('pserver'),
      ['--port', '0', '--log-format', 'json', '--checkpoint-dir', tempDir('checkpoints'), ...args],
      { name: 'pserver-refused' },
    );
    const exit = await child.exited;
    expect(exit.code).toBe(1);
    return String(child.jsonLines().find((line) => line.level === 'fatal')?.msg);
  }

  it('refuses an unreadable certificate, naming the flag and file', async () => {
    const { certs } = securityFiles();
    const message = await refusal([
      '--tls-cert',
      '/nonexistent.pem',
      '--tls-key',
      certs.server.key,
    ]);
    expect(message).toMatch(/^cannot start: --tls-cert \/nonexistent\.pem: ENOENT/);
  });

  it('refuses a key that is not the certificate’s', async () => {
    const { certs } = securityFiles();
    const message = await refusal(['--tls-cert', certs.server.cert, '--tls-key', certs.admin.key]);
    expect(message).toMatch(
      /^cannot start: --tls-cert .*server\.pem, --tls-key .*admin\.key: .*key values mismatch/,
    );
  });

  it('refuses bearer tokens without TLS', async () => {
    const { authConfig } = securityFiles();
    const message = await refusal(['--auth-config', authConfig]);
    expect(message).toMatch(/bearer tokens need --tls-cert and --tls-key/);
  });
});
