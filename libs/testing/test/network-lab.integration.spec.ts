import { execFileSync } from 'node:child_process';
import { NetworkLab, spawnProcess, stopAllProcesses, type ManagedProcess } from '../src';

// The network lab's faults, checked with real sockets: a server on one host, clients on another
// and on the machine. Needs root (CI runs as root).

afterAll(() => stopAllProcesses());

const port = 7100;

/** What a TCP connect to `address` ends in within 1 s, as run on `from` (the machine if none). */
function connectFrom(lab: NetworkLab, from: string | undefined, address: string): string {
  const probe = `
    const socket = require('node:net').connect(${port}, '${address}');
    socket.setTimeout(1000, () => { console.log('timeout'); process.exit(); });
    socket.on('data', (data) => { console.log('reply ' + data); process.exit(); });
    socket.on('error', (err) => { console.log(err.code); process.exit(); });`;
  const [command, args] = from
    ? lab.command(lab.host(from), process.execPath, ['-e', probe])
    : [process.execPath, ['-e', probe]];
  return execFileSync(command, args, { encoding: 'utf8' }).trim();
}

/** The names of the machine's network namespaces and links that the lab made. */
function leftovers(lab: NetworkLab): string[] {
  const names = [
    // `<name> (id: 3)`
    ...execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.split(' ')[0]!),
    // `53: <name>@if2: <BROADCAST,…`
    ...execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.split(': ')[1]?.split('@')[0] ?? ''),
  ];
  return names.filter((name) => name.startsWith(lab.bridge));
}

describe('a network lab', () => {
  let lab: NetworkLab;
  let server: ManagedProcess;

  beforeAll(async () => {
    lab = NetworkLab.create();
    const host = lab.host('server');
    lab.host('client');
    lab.host('bystander');
    // On `port` a greeting; on the next one, 256 KiB.
    const script = `
      const net = require('node:net');
      net.createServer((s) => s.end('hi')).listen(${port}, '${host.address}', () => {
        net.createServer((s) => s.end(Buffer.alloc(256 * 1024))).listen(${port + 1}, '${host.address}', () => console.log('listening'));
      });`;
    const [command, args] = lab.command(host, process.execPath, ['-e', script]);
    server = spawnProcess(command, args, { name: 'lab-server' });
    await server.waitForLine((line) => line === 'listening', { timeoutMs: 10_000 });
  });

  afterAll(async () => {
    await server?.stop();
    lab?.destroy();
  });

  it('gives each host its own address, reached from every other host and from the machine', () => {
    const { address } = lab.host('server');
    expect(address).toMatch(/^10\.213\.\d+\.2$/);
    expect(lab.host('client').address).not.toBe(address);
    expect(connectFrom(lab, 'client', address)).toBe('reply hi');
    expect(connectFrom(lab, undefined, address)).toBe('reply hi');
  });

  it('partitions two hosts both ways, as a black hole or with resets; others still get through', () => {
    const { address } = lab.host('server');
    lab.partition('client', 'server');
    expect(connectFrom(lab, 'client', address)).toBe('timeout');
    expect(connectFrom(lab, 'bystander', address)).toBe('reply hi');
    lab.heal();
    expect(connectFrom(lab, 'client', address)).toBe('reply hi');
    lab.partition('client', 'server', 'reset');
    expect(connectFrom(lab, 'client', address)).toBe('ECONNREFUSED');
    lab.heal();
  });

  it('drops one direction alone: a client whose packets to the server are lost cannot connect', () => {
    const { address } = lab.host('server');
    lab.oneWay('client', 'server');
    expect(connectFrom(lab, 'client', address)).toBe('timeout');
    expect(connectFrom(lab, 'bystander', address)).toBe('reply hi');
    lab.heal();
    lab.oneWay('server', 'client');
    // The server's answers to the client are lost.
    expect(connectFrom(lab, 'client', address)).toBe('timeout');
    lab.heal();
    expect(connectFrom(lab, 'client', address)).toBe('reply hi');
  });

  it('isolates a host from everyone, the machine included, until healed', () => {
    const { address } = lab.host('server');
    lab.isolate('server');
    expect(connectFrom(lab, 'client', address)).toBe('timeout');
    expect(connectFrom(lab, undefined, address)).toBe('timeout');
    lab.heal();
    expect(connectFrom(lab, 'client', address)).toBe('reply hi');
  });

  it('makes a host lossy, until healed', () => {
    const { address } = lab.host('server');
    // Nearly every packet lost: no connect gets through (what fraction is lost is iptables').
    lab.lossy('server', 0.99);
    expect(connectFrom(lab, 'client', address)).toBe('timeout');
    lab.heal();
    expect(connectFrom(lab, 'client', address)).toBe('reply hi');
  });

  it('limits what a host sends to a rate, until healed', () => {
    const { address } = lab.host('server');
    const fetch = `
      const started = Date.now();
      let bytes = 0;
      const socket = require('node:net').connect(${port + 1}, '${address}');
      socket.on('data', (data) => { bytes += data.length; });
      socket.on('end', () => console.log(JSON.stringify({ bytes, ms: Date.now() - started })));`;
    const [command, args] = lab.command(lab.host('client'), process.execPath, ['-e', fetch]);
    // 256 KiB at 1 Mbit/s take 2.1 s at least.
    lab.slow('server', 1_000_000);
    const slowed = JSON.parse(execFileSync(command, args, { encoding: 'utf8' })) as {
      bytes: number;
      ms: number;
    };
    lab.heal();
    expect(slowed.bytes).toBe(256 * 1024);
    expect(slowed.ms).toBeGreaterThan(1_500);
    expect(connectFrom(lab, 'client', address)).toBe('reply hi');
  });

  it('leaves no namespace or link behind, its names free again at once', () => {
    const other = NetworkLab.create();
    let namespace: string;
    try {
      namespace = other.host('a').namespace;
      expect(leftovers(other).sort()).toEqual([other.bridge, namespace, `${other.bridge}v2`]);
    } finally {
      other.destroy();
    }
    expect(leftovers(other)).toEqual([]);
    // The next lab of this process takes the same names.
    const next = NetworkLab.create();
    try {
      expect(next.host('a').namespace).toBe(namespace);
    } finally {
      next.destroy();
    }
    expect(leftovers(next)).toEqual([]);
  });
});
