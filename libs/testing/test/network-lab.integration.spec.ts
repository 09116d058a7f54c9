import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import {
  FaultProxy,
  NetworkLab,
  spawnProcess,
  stopAllProcesses,
  type ManagedProcess,
} from '../src';

// The network lab's faults, checked with real sockets: a server on one host, clients on another
// and on the machine. Needs root (CI runs as root).

afterAll(() => stopAllProcesses());

const execFileAsync = promisify(execFile);

const port = 7100;

/**
 * What a TCP connect to `address` ends in within 1 s, as run on `from` (the machine if none); run
 * apart, so that this process (a fault proxy's) goes on meanwhile.
 */
async function connectFrom(
  lab: NetworkLab,
  from: string | undefined,
  address: string,
): Promise<string> {
  const probe = `
    const socket = require('node:net').connect(${port}, '${address}');
    socket.setTimeout(1000, () => { console.log('timeout'); process.exit(); });
    socket.on('data', (data) => { console.log('reply ' + data); process.exit(); });
    socket.on('error', (err) => { console.log(err.code); process.exit(); });`;
  const [command, args] = from
    ? lab.command(lab.host(from), process.execPath, ['-e', probe])
    : [process.execPath, ['-e', probe]];
  return (await execFileAsync(command, args, { encoding: 'utf8' })).stdout.trim();
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
    // On `port` a greeting; on the next one, 256 KiB. A connection reset is no crash.
    const script = `
      const net = require('node:net');
      net.createServer((s) => s.on('error', () => {}).end('hi')).listen(${port}, '${host.address}', () => {
        net.createServer((s) => s.on('error', () => {}).end(Buffer.alloc(256 * 1024))).listen(${port + 1}, '${host.address}', () => console.log('listening'));
      });`;
    const [command, args] = lab.command(host, process.execPath, ['-e', script]);
    server = spawnProcess(command, args, { name: 'lab-server' });
    await server.waitForLine((line) => line === 'listening', { timeoutMs: 10_000 });
  });

  afterAll(async () => {
    await server?.stop();
    lab?.destroy();
  });

  it('gives each host its own address, reached from every other host and from the machine', async () => {
    const { address } = lab.host('server');
    expect(address).toMatch(/^10\.213\.\d+\.2$/);
    expect(lab.host('client').address).not.toBe(address);
    expect(await connectFrom(lab, 'client', address)).toBe('reply hi');
    expect(await connectFrom(lab, undefined, address)).toBe('reply hi');
  });

  it('partitions two hosts both ways, as a black hole or with resets; others still get through', async () => {
    const { address } = lab.host('server');
    lab.partition('client', 'server');
    expect(await connectFrom(lab, 'client', address)).toBe('timeout');
    expect(await connectFrom(lab, 'bystander', address)).toBe('reply hi');
    lab.heal();
    expect(await connectFrom(lab, 'client', address)).toBe('reply hi');
    lab.partition('client', 'server', 'reset');
    expect(await connectFrom(lab, 'client', address)).toBe('ECONNREFUSED');
    lab.heal();
  });

  it('drops one direction alone: a client whose packets to the server are lost cannot connect', async () => {
    const { address } = lab.host('server');
    lab.oneWay('client', 'server');
    expect(await connectFrom(lab, 'client', address)).toBe('timeout');
    expect(await connectFrom(lab, 'bystander', address)).toBe('reply hi');
    lab.heal();
    lab.oneWay('server', 'client');
    // The server's answers to the client are lost.
    expect(await connectFrom(lab, 'client', address)).toBe('timeout');
    lab.heal();
    expect(await connectFrom(lab, 'client', address)).toBe('reply hi');
  });

  it("sends a host's connections through a fault proxy, open ones reset, until healed", async () => {
    const { address } = lab.host('server');
    const proxy = await FaultProxy.start(`${address}:${port}`, `${lab.subnet}.1`);
    try {
      proxy.set({ stalled: true });
      lab.throughProxy('server', port, proxy.address);
      // Connected to the proxy, which holds the greeting back; so is a host made after the fault.
      expect(await connectFrom(lab, 'client', address)).toBe('timeout');
      lab.host('late-client');
      expect(await connectFrom(lab, 'late-client', address)).toBe('timeout');
      proxy.heal();
      expect(await connectFrom(lab, 'client', address)).toBe('reply hi');
      proxy.set({ stalled: true });
      lab.heal();
      expect(await connectFrom(lab, 'client', address)).toBe('reply hi');
    } finally {
      lab.heal();
      await proxy.close();
    }
  });

  it('isolates a host from everyone, the machine included, until healed', async () => {
    const { address } = lab.host('server');
    lab.isolate('server');
    expect(await connectFrom(lab, 'client', address)).toBe('timeout');
    expect(await connectFrom(lab, undefined, address)).toBe('timeout');
    lab.heal();
    expect(await connectFrom(lab, 'client', address)).toBe('reply hi');
  });

  it('makes a host lossy, until healed', async () => {
    const { address } = lab.host('server');
    // Nearly every packet lost: no connect gets through (what fraction is lost is iptables').
    lab.lossy('server', 0.99);
    expect(await connectFrom(lab, 'client', address)).toBe('timeout');
    lab.heal();
    expect(await connectFrom(lab, 'client', address)).toBe('reply hi');
  });

  it('limits what a host sends to a rate, until healed', async () => {
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
    expect(await connectFrom(lab, 'client', address)).toBe('reply hi');
  });

  it('leaves no namespace or link behind, its names free again at once', async () => {
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
