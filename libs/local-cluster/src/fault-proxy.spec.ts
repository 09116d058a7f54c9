import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { FaultProxy } from './fault-proxy';

// The fault proxy with real sockets on loopback (no root): an echo server behind it. Timings are
// checked only from below (a fault can make bytes late, nothing can make them early).

let echo: net.Server;
let echoAddress: string;
/** Chunks the echo server received, by connection. */
const received: Buffer[][] = [];

beforeAll(async () => {
  echo = net.createServer((socket) => {
    const chunks: Buffer[] = [];
    received.push(chunks);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      socket.write(chunk);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  echoAddress = `127.0.0.1:${(echo.address() as net.AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => echo.close(resolve)));

let proxy: FaultProxy;
beforeEach(async () => {
  proxy = await FaultProxy.start(echoAddress);
});
afterEach(() => proxy.close());

function connect(address: string): Promise<net.Socket> {
  const [host, port] = address.split(':');
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), host, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Writes `bytes` and resolves with the echo once `bytes.length` bytes came back, and how long. */
function roundTrip(socket: net.Socket, bytes: Buffer): Promise<{ echo: Buffer; ms: number }> {
  const startMs = Date.now();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      length += chunk.length;
      if (length < bytes.length) return;
      socket.off('data', onData);
      resolve({ echo: Buffer.concat(chunks), ms: Date.now() - startMs });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(bytes);
  });
}

const digest = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

describe('a fault proxy', () => {
  it('forwards every byte both ways, in order', async () => {
    const socket = await connect(proxy.address);
    const bytes = randomBytes(4 << 20);
    const { echo: back } = await roundTrip(socket, bytes);
    expect(digest(back)).toBe(digest(bytes));
    socket.destroy();
  });

  it('holds each chunk for its latency each way, and keeps order under jitter', async () => {
    const socket = await connect(proxy.address);
    proxy.set({ latencyMs: 100 });
    expect((await roundTrip(socket, Buffer.from('ping'))).ms).toBeGreaterThanOrEqual(195);
    proxy.set({ latencyMs: 20, jitterMs: 20 });
    // 200 writes drawn 0–40 ms late each: any reordering would show in the echo.
    const writes = Array.from({ length: 200 }, (_, i) => Buffer.from(`${i};`));
    const all = Buffer.concat(writes);
    const back = new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (Buffer.concat(chunks).length >= all.length) resolve(Buffer.concat(chunks));
      });
    });
    for (const write of writes) {
      socket.write(write);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await back).toString()).toBe(all.toString());
    socket.destroy();
  });

  it('limits bandwidth, and cuts chunks into slices sent apart', async () => {
    const socket = await connect(proxy.address);
    proxy.set({ bytesPerSecond: 200_000 }, 'upstream');
    const bytes = randomBytes(100_000);
    const slow = await roundTrip(socket, bytes);
    expect(digest(slow.echo)).toBe(digest(bytes));
    expect(slow.ms).toBeGreaterThanOrEqual(495);
    proxy.heal();
    proxy.set({ sliceBytes: 10, sliceDelayMs: 20 }, 'upstream');
    const chunksBefore = received.at(-1)!.length;
    const sliced = await roundTrip(socket, Buffer.from('0123456789abcdefghij0123456789'));
    expect(sliced.echo.toString()).toBe('0123456789abcdefghij0123456789');
    expect(sliced.ms).toBeGreaterThanOrEqual(39);
    // The server read the three slices apart (the first two at least 20 ms apart).
    expect(received.at(-1)!.length - chunksBefore).toBeGreaterThanOrEqual(2);
    socket.destroy();
  });

  it('stalls one direction: nothing passes until the stall ends, then all of it does', async () => {
    const socket = await connect(proxy.address);
    await roundTrip(socket, Buffer.from('hi: '));
    proxy.set({ stalled: true }, 'downstream');
    const serverChunks = received.at(-1)!;
    let echoed = 0;
    socket.on('data', (chunk: Buffer) => (echoed += chunk.length));
    socket.write('stalled?');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(Buffer.concat(serverChunks).toString()).toBe('hi: stalled?');
    expect(echoed).toBe(0);
    proxy.heal();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(echoed).toBe('stalled?'.length);
    socket.destroy();
  });

  it('resets open connections, refuses new ones until healed', async () => {
    const socket = await connect(proxy.address);
    const closed = new Promise<string>((resolve) =>
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(String(err.code))),
    );
    proxy.reset({ refuse: true });
    expect(await closed).toBe('ECONNRESET');
    const refused = await connect(proxy.address).then(
      (s) =>
        new Promise<string>((resolve) => {
          s.once('error', (err: NodeJS.ErrnoException) => resolve(String(err.code)));
          s.once('close', () => resolve('closed'));
        }),
      (err: NodeJS.ErrnoException) => String(err.code),
    );
    expect(refused).toBe('ECONNRESET');
    proxy.heal();
    const again = await connect(proxy.address);
    expect((await roundTrip(again, Buffer.from('back'))).echo.toString()).toBe('back');
    again.destroy();
  });
});
