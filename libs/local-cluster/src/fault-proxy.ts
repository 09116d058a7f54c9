import net from 'node:net';

/**
 * What a fault proxy does to the bytes it forwards, each way apart. Every fault keeps the stream
 * intact and in order: bytes are late, never lost, as TCP itself delivers them.
 */
export interface ProxyFaults {
  /** Each chunk is held this long… */
  latencyMs: number;
  /** …give or take up to this much, drawn at random for each chunk (order is kept). */
  jitterMs: number;
  /** At most this many bytes a second (0: no limit). */
  bytesPerSecond: number;
  /** Chunks cut into slices of at most this many bytes (0: not cut)… */
  sliceBytes: number;
  /** …sent this long apart. */
  sliceDelayMs: number;
  /** Nothing is forwarded (it waits, and goes when the stall ends): a silent peer. */
  stalled: boolean;
}

export type ProxyDirection = 'both' | 'upstream' | 'downstream';

const noFaults: ProxyFaults = {
  latencyMs: 0,
  jitterMs: 0,
  bytesPerSecond: 0,
  sliceBytes: 0,
  sliceDelayMs: 0,
  stalled: false,
};

/** Bytes waiting in one direction of one connection before its sender is paused. */
const highWaterBytes = 1 << 20;

/**
 * A TCP proxy in this process between clients and one server, with the faults a kernel's netem
 * would give and this machine lacks: latency with jitter, a bandwidth limit, slicing and stalls
 * in either direction (`upstream`: client to server), resets of every open connection, and
 * refused connects. It needs no root. A server reached only through it (a pserver whose
 * `--advertise-address` is the proxy's) has every link slowed at once.
 */
export class FaultProxy {
  private readonly faults: Record<'upstream' | 'downstream', ProxyFaults> = {
    upstream: { ...noFaults },
    downstream: { ...noFaults },
  };
  private readonly connections = new Set<{ client: net.Socket; server: net.Socket }>();
  private refusing = false;
  private readonly stallEnded = new Set<() => void>();

  private constructor(
    private readonly listener: net.Server,
    /** The address clients connect to, `host:port`. */
    readonly address: string,
    /** The server's address, `host:port`. */
    readonly target: string,
  ) {}

  /** Listens on `host` (a free port) and forwards each connection to `target` (`host:port`). */
  static async start(target: string, host = '127.0.0.1'): Promise<FaultProxy> {
    // Half-open: one end's FIN is passed on after what waits for that end is written.
    const listener = net.createServer({ allowHalfOpen: true });
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(0, host, resolve);
    });
    const { port } = listener.address() as net.AddressInfo;
    const proxy = new FaultProxy(listener, `${host}:${port}`, target);
    listener.on('connection', (client) => proxy.accept(client));
    return proxy;
  }

  /** Sets `faults` (the rest as they were) on `direction`. */
  set(faults: Partial<ProxyFaults>, direction: ProxyDirection = 'both'): void {
    for (const way of ['upstream', 'downstream'] as const)
      if (direction === 'both' || direction === way) Object.assign(this.faults[way], faults);
    this.wakeStalled();
  }

  /** Every open connection reset (both ends get an RST); with `refuse`, new ones too until `heal`. */
  reset({ refuse = false }: { refuse?: boolean } = {}): void {
    this.refusing ||= refuse;
    for (const { client, server } of this.connections) {
      client.resetAndDestroy();
      server.resetAndDestroy();
    }
  }

  /** No faults; connections accepted again. What waits is sent. */
  heal(): void {
    this.set(noFaults);
    this.refusing = false;
  }

  /** Stops listening and resets every connection. */
  async close(): Promise<void> {
    this.reset();
    await new Promise((resolve) => this.listener.close(resolve));
  }

  private accept(client: net.Socket): void {
    if (this.refusing) {
      client.resetAndDestroy();
      return;
    }
    const [host, port] = splitAddress(this.target);
    const server = net.connect({ port, host, allowHalfOpen: true });
    const connection = { client, server };
    this.connections.add(connection);
    for (const socket of [client, server]) {
      socket.setNoDelay(true);
      // An end reset or failed resets the other; a clean end is passed on once what waits is sent.
      socket.on('error', () => {
        client.resetAndDestroy();
        server.resetAndDestroy();
      });
      socket.on('close', () => this.connections.delete(connection));
    }
    this.forward(client, server, this.faults.upstream);
    this.forward(server, client, this.faults.downstream);
  }

  /**
   * Bytes from `from` go to `to` in order, each chunk when its faults allow: one queue of
   * (bytes, due time), drained by one timer, so that jitter never reorders.
   */
  private forward(from: net.Socket, to: net.Socket, faults: ProxyFaults): void {
    const queue: { bytes: Buffer; dueMs: number }[] = [];
    let queued = 0;
    let lastDueMs = 0;
    let ended = false;
    let timer: NodeJS.Timeout | undefined;
    const drain = (): void => {
      timer = undefined;
      if (faults.stalled) {
        this.stallEnded.add(drain);
        return;
      }
      const now = Date.now();
      while (queue.length > 0 && queue[0]!.dueMs <= now) {
        const { bytes } = queue.shift()!;
        queued -= bytes.length;
        if (!to.destroyed) to.write(bytes);
      }
      if (queued < highWaterBytes && from.isPaused()) from.resume();
      if (queue.length > 0) timer = setTimeout(drain, queue[0]!.dueMs - now);
      else if (ended) to.end();
    };
    from.on('data', (chunk: Buffer) => {
      const now = Date.now();
      const step = faults.sliceBytes > 0 ? faults.sliceBytes : chunk.length;
      for (let offset = 0; offset < chunk.length; offset += step) {
        const bytes = chunk.subarray(offset, offset + step);
        const jitter = faults.jitterMs * (2 * Math.random() - 1);
        const sent = offset > 0 ? faults.sliceDelayMs : 0;
        const wire = faults.bytesPerSecond > 0 ? (bytes.length * 1000) / faults.bytesPerSecond : 0;
        const dueMs = Math.max(now + faults.latencyMs + jitter, lastDueMs + sent) + wire;
        lastDueMs = dueMs;
        queue.push({ bytes, dueMs });
        queued += bytes.length;
      }
      if (queued >= highWaterBytes) from.pause();
      if (!timer) drain();
    });
    from.on('end', () => {
      ended = true;
      if (!timer) drain();
    });
  }

  private wakeStalled(): void {
    const waiting = [...this.stallEnded];
    this.stallEnded.clear();
    for (const drain of waiting) drain();
  }
}

function splitAddress(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  return [address.slice(0, colon), Number(address.slice(colon + 1))];
}
