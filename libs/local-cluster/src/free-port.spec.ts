import fs from 'node:fs';
import net from 'node:net';
import { freePort } from './free-port';

describe('freePort', () => {
  it('hands out distinct bindable ports below the ephemeral range', async () => {
    const ephemeralLow = Number(
      fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    const ports: number[] = [];
    for (let i = 0; i < 50; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThan(1_024);
      expect(port).toBeLessThan(ephemeralLow);
    }
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(ports[0], '127.0.0.1', resolve));
    expect((server.address() as net.AddressInfo).port).toBe(ports[0]);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
});
