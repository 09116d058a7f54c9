import { credentials, loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { checkHealth } from '@pserver/rpc';
import fs from 'node:fs';
import path from 'node:path';
import { appBundle, spawnNode, stopAllProcesses, tempDir, workspaceRoot } from '@pserver/testing';

afterAll(stopAllProcesses);

describe('the pserver process', () => {
  it('starts from its bundle, answers gRPC health checks and exits 0 on SIGTERM', async () => {
    const pserver = spawnNode(
      appBundle('pserver'),
      ['--port', '0', '--log-format', 'json', '--checkpoint-dir', tempDir('process')],
      {
        name: 'pserver',
      },
    );
    const listening = await pserver.waitForLog((e) => e.msg === 'listening', { timeoutMs: 20_000 });
    const address = String(listening.address);
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);

    await expect(checkHealth(address)).resolves.toBe('SERVING');
    await expect(checkHealth(address, 'pserver.v1.ParameterServer')).resolves.toBe('SERVING');

    expect(await pserver.stop()).toEqual({ code: 0, signal: null });
    expect(pserver.jsonLines().map((e) => e.msg)).toEqual(
      expect.arrayContaining(['listening', 'shutting down', 'stopped']),
    );
  });

  it.each(['pserver', 'master'])('%s --version prints the version and exits 0', async (app) => {
    const child = spawnNode(appBundle(app), ['--version'], { name: `${app}-version` });
    expect(await child.exited).toEqual({ code: 0, signal: null });
    const { version } = JSON.parse(
      fs.readFileSync(path.join(workspaceRoot(), 'package.json'), 'utf8'),
    ) as { version: string };
    expect(child.lines).toEqual([`${app} ${version} (node ${process.version})`]);
  });

  it('refuses an invalid flag with a message naming it', async () => {
    const pserver = spawnNode(appBundle('pserver'), ['--port', 'eighty'], {
      name: 'pserver-bad-flag',
    });
    const status = await pserver.exited;
    expect(status.code).not.toBe(0);
    expect(pserver.lines.join('\n')).toContain(
      "option '--port <port>' argument 'eighty' is invalid",
    );
  });
});

describe('server reflection', () => {
  it('lists the ParameterServer service and describes it', async () => {
    const protoPath =
      require.resolve('@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto');
    const reflection = loadPackageDefinition(
      loadSync(protoPath, { keepCase: true }),
    ) as unknown as {
      grpc: {
        reflection: {
          v1: { ServerReflection: new (address: string, creds: unknown) => ReflectionClient };
        };
      };
    };
    interface ReflectionClient {
      ServerReflectionInfo(): NodeJS.ReadWriteStream & {
        write(request: object): boolean;
        end(): void;
      };
      close(): void;
    }
    const pserver = spawnNode(
      appBundle('pserver'),
      ['--port', '0', '--log-format', 'json', '--checkpoint-dir', tempDir('reflection')],
      {
        name: 'pserver-reflection',
      },
    );
    const address = String(
      (await pserver.waitForLog((e) => e.msg === 'listening', { timeoutMs: 20_000 })).address,
    );
    const client = new reflection.grpc.reflection.v1.ServerReflection(
      address,
      credentials.createInsecure(),
    );
    const stream = client.ServerReflectionInfo();
    const replies: Record<string, unknown>[] = [];
    const done = new Promise<void>((resolve, reject) => {
      stream.on('data', (reply: Record<string, unknown>) => replies.push(reply));
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    stream.write({ list_services: '' });
    stream.write({ file_containing_symbol: 'pserver.v1.ParameterServer' });
    stream.end();
    await done;
    client.close();
    const services = (
      replies[0]?.list_services_response as { service: { name: string }[] }
    ).service.map((s) => s.name);
    expect(services).toEqual(['pserver.v1.ParameterServer']);
    const files = (replies[1]?.file_descriptor_response as { file_descriptor_proto: Buffer[] })
      .file_descriptor_proto;
    expect(files.length).toBeGreaterThan(0);
    expect(Buffer.concat(files).toString('latin1')).toContain('SendGradsStream');
    await pserver.stop();
  });
});
