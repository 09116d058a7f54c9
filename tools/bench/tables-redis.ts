/**
 * Redis as a user would put an embedding table in it (TorchRec's dynamic embedding pattern): one
 * key per row, the id's 8 bytes; the value the row's `dim` float32 and its optimizer state
 * (row-wise Adagrad: one float32), binary. A lookup is a pipelined MGET; a push MGETs the rows,
 * applies row-wise Adagrad here with the pserver's own kernel (`RowOptimizer`, so the rule is
 * the same bit for bit) and writes them back with a pipelined MSET.
 */
import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { RowOptimizer } from '@pserver/optimizer';
import { freePort, spawnProcess, type ManagedProcess } from '@pserver/testing';
import { keysOf, type Batch } from './tables-workload';

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Installs Debian's redis-server when it is missing and this is root; otherwise says what to do. */
export function ensureRedisServer(): void {
  if (onPath('redis-server')) return;
  if (process.getuid?.() === 0 && onPath('apt-get')) {
    console.log('redis-server is missing: installing the Debian package');
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '-qq', 'redis-server'], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    return;
  }
  throw new Error(
    "redis-server is not on PATH: install it with 'sudo apt-get install redis-server' " +
      '(Debian/Ubuntu) and run the benchmark again',
  );
}

export interface RedisServer {
  readonly process: ManagedProcess;
  readonly port: number;
}

/** A redis-server on a free loopback port without persistence; stop it with `process.stop()`. */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  const child = spawnProcess(
    'redis-server',
    [
      ...['--port', String(port), '--bind', '127.0.0.1'],
      ...['--save', '', '--appendonly', 'no'],
      ...['--protected-mode', 'no', '--daemonize', 'no', '--loglevel', 'warning'],
    ],
    { name: 'bench-redis' },
  );
  try {
    const client = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      retryStrategy: () => null,
    });
    // Refused connections while it starts are expected; connect() rejects with them as well.
    client.on('error', () => undefined);
    // redis-server has no readiness line at loglevel warning: connect until it answers.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.connect();
        await client.ping();
        client.disconnect();
        break;
      } catch (err) {
        client.disconnect();
        if (!child.running || attempt > 100) throw child.failure(`not answering: ${String(err)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  } catch (err) {
    await child.stop();
    throw err;
  }
  return { process: child, port };
}

export interface RedisTableOptions {
  port: number;
  dim: number;
  learningRate: number;
  /** Keys per MGET or MSET command; a batch is sent as one pipeline of such commands. */
  keysPerCommand: number;
}

/** One table in Redis, driven as described at the top of this file. */
export class RedisTable {
  readonly client: Redis;
  private readonly optimizer: RowOptimizer;
  private readonly stride: number;
  private readonly rowIndex: Int32Array;
  private step = 0;

  constructor(
    private readonly options: RedisTableOptions,
    maxBatch: number,
  ) {
    this.client = new Redis({
      port: options.port,
      host: '127.0.0.1',
      maxRetriesPerRequest: 0,
      enableOfflineQueue: true,
    });
    this.optimizer = new RowOptimizer(
      { rowwiseAdagrad: {}, learningRate: { base: options.learningRate } },
      options.dim,
    );
    this.stride = this.optimizer.layout.stride;
    this.rowIndex = Int32Array.from({ length: maxBatch }, (_, i) => i);
  }

  /** Used memory in bytes, from INFO memory. */
  async usedMemory(): Promise<number> {
    const info = await this.client.info('memory');
    const match = /^used_memory:(\d+)/m.exec(info);
    if (!match) throw new Error('INFO memory has no used_memory');
    return Number(match[1]);
  }

  async dbsize(): Promise<number> {
    return this.client.dbsize();
  }

  private async mget(keys: Buffer[]): Promise<(Buffer | null)[]> {
    const pipeline = this.client.pipeline();
    const per = this.options.keysPerCommand;
    for (let start = 0; start < keys.length; start += per)
      pipeline.mgetBuffer(keys.slice(start, start + per));
    const replies = (await pipeline.exec()) ?? [];
    const rows: (Buffer | null)[] = [];
    for (const [err, value] of replies) {
      if (err) throw err;
      for (const row of value as (Buffer | null)[]) rows.push(row);
    }
    if (rows.length !== keys.length)
      throw new Error(`MGET answered ${rows.length} values for ${keys.length} keys`);
    return rows;
  }

  /** The rows' values (ids × dim float32); a missing row reads as zeros. */
  async lookup(batch: Batch): Promise<number> {
    const rows = await this.mget(keysOf(batch));
    const rowBytes = this.options.dim * 4;
    const out = new Uint8Array(rows.length * rowBytes);
    let found = 0;
    for (let k = 0; k < rows.length; k++) {
      const row = rows[k];
      if (!row) continue;
      out.set(row.subarray(0, rowBytes), k * rowBytes);
      found++;
    }
    return found;
  }

  /** Reads the rows, applies `grads` (ids × dim) with row-wise Adagrad, writes them back. */
  async push(batch: Batch, grads: Float32Array): Promise<number> {
    const keys = keysOf(batch);
    const n = keys.length;
    const rows = await this.mget(keys);
    const data = new Float32Array(n * this.stride);
    const bytes = new Uint8Array(data.buffer);
    const rowBytes = this.stride * 4;
    let created = 0;
    for (let k = 0; k < n; k++) {
      const row = rows[k];
      // A new row starts at zeros with the accumulator at its initial value (0), as the
      // pserver's table with no initializer does.
      if (row) bytes.set(row, k * rowBytes);
      else created++;
    }
    this.optimizer.update(
      data,
      this.rowIndex.subarray(0, n),
      grads.subarray(0, n * this.options.dim),
      ++this.step,
    );
    const pipeline = this.client.pipeline();
    const per = this.options.keysPerCommand;
    const buffer = Buffer.from(data.buffer);
    for (let start = 0; start < n; start += per) {
      const args: Buffer[] = [];
      for (let k = start; k < Math.min(n, start + per); k++)
        args.push(keys[k]!, buffer.subarray(k * rowBytes, (k + 1) * rowBytes));
      pipeline.mset(...args);
    }
    for (const [err] of (await pipeline.exec()) ?? []) if (err) throw err;
    return created;
  }

  close(): void {
    this.client.disconnect();
  }
}
