import { checkHealth } from '@pserver/rpc';
import { appBundle, spawnNode, stopAllProcesses } from '@pserver/testing';

afterAll(stopAllProcesses);

describe('the pserver process', () => {
  it('starts from its bundle, answers gRPC health checks and exits 0 on SIGTERM', async () => {
    const pserver = spawnNode(appBundle('pserver'), ['--port', '0', '--log-format', 'json'], {
      name: 'pserver',
    });
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
