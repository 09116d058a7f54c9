/**
 * The three servers of the data-plane benchmark, each started as a fresh process on a free
 * loopback port and stopped by its PID: the Python and Go reference servers in this folder, and
 * the pserver as built in dist/. Also their mutual-TLS material and the Go server's build.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const serverNames = ['python', 'go', 'pserver'] as const;
export type ServerName = (typeof serverNames)[number];

/** Certificates of one run: a CA, the servers' (127.0.0.1), a trainer's (OU=trainers). */
export interface TlsFiles {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** The pserver's access config: the trainer certificate holds the trainer role. */
  authConfig: string;
}

export interface Layout {
  root: string;
  python: string;
  goBinary: string;
}

/** A running server; `stop()` ends it by PID and removes what it left behind. */
export interface RunningServer {
  name: ServerName;
  pid: number;
  port: number;
  stop(): Promise<void>;
}

const readyTimeoutMs = 30_000;
const stopTimeoutMs = 15_000;
const running = new Set<RunningServer>();

export function goBinaryPath(root: string): string {
  return path.join(root, 'dist/bench/data-plane/go-server');
}

/**
 * Builds the Go reference server offline, in GOPATH mode against Debian's Go sources (the Go
 * client's gopath.sh); its package lies outside GOPATH and imports the client's stubs.
 */
export function buildGoServer(root: string): void {
  const source = path.join(root, 'tools/bench/data-plane/go-server');
  const build = spawnSync(
    path.join(root, 'clients/go/tools/gopath.sh'),
    ['sh', '-c', 'cd "$1" && go build -trimpath -o "$2" .', 'sh', source, goBinaryPath(root)],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  if (build.status !== 0) {
    throw new Error(
      'building the Go reference server failed (it needs golang-go, golang-google-grpc-dev, ' +
        'golang-google-protobuf-dev and golang-github-golang-protobuf-1-5-dev)',
    );
  }
}

/** Makes the run's certificates with tools/certs/generate.sh in a new temporary directory. */
export function makeCertificates(root: string): TlsFiles {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-data-plane-tls-'));
  const generate = path.join(root, 'tools/certs/generate.sh');
  for (const args of [
    ['ca', dir],
    ['server', dir, 'server', 'IP:127.0.0.1,DNS:localhost'],
    ['client', dir, 'trainer', 'trainers'],
  ]) {
    const result = spawnSync(generate, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    if (result.status !== 0) throw new Error(`tools/certs/generate.sh ${args[0]} failed`);
  }
  const authConfig = path.join(dir, 'auth.json');
  fs.writeFileSync(
    authConfig,
    JSON.stringify({ clientCertificates: [{ ou: 'trainers', role: 'trainer' }] }),
  );
  const file = (name: string): string => path.join(dir, name);
  return {
    dir,
    ca: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('trainer.pem'),
    clientKey: file('trainer.key'),
    authConfig,
  };
}

/** A port nobody listens on now (the kernel's pick), for the next server. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Command {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Removed after the server stops. */
  scratchDir?: string;
}

function commandFor(name: ServerName, layout: Layout, port: number, tls?: TlsFiles): Command {
  const here = path.join(layout.root, 'tools/bench/data-plane');
  const tlsArgs = tls
    ? ['--tls-cert', tls.serverCert, '--tls-key', tls.serverKey, '--tls-client-ca', tls.ca]
    : [];
  switch (name) {
    case 'python':
      return {
        command: layout.python,
        args: [path.join(here, 'python-server/server.py'), '--port', String(port), ...tlsArgs],
        env: process.env,
      };
    case 'go':
      return {
        command: layout.goBinary,
        args: ['--port', String(port), ...tlsArgs],
        env: process.env,
      };
    case 'pserver': {
      // A standalone shard with a fresh checkpoint directory in memory, run as its README says
      // (huge pages for malloc); under TLS with the access check, as a secured job runs.
      const shm = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
      const checkpointDir = fs.mkdtempSync(path.join(shm, 'bench-data-plane-ckpt-'));
      return {
        command: process.execPath,
        args: [
          path.join(layout.root, 'dist/apps/pserver/main.js'),
          ...['--port', String(port), '--checkpoint-dir', checkpointDir],
          ...['--log-format', 'json', '--log-level', 'warn', '--exit-on-stdin-close'],
          ...tlsArgs,
          ...(tls ? ['--auth-config', tls.authConfig] : []),
        ],
        env: process.env,
        scratchDir: checkpointDir,
      };
    }
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

function tail(file: string, lines = 20): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

async function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Starts `name` on a free port, its output in `logFile`, and resolves once the port accepts
 * connections; rejects with the log's tail if the process exits first.
 */
export async function startServer(
  name: ServerName,
  layout: Layout,
  logFile: string,
  tls?: TlsFiles,
): Promise<RunningServer> {
  const port = await freePort();
  const { command, args, env, scratchDir } = commandFor(name, layout, port, tls);
  const log = fs.openSync(logFile, 'w');
  // stdin stays open as a pipe: the pserver exits when it closes (this process died).
  const child = spawn(command, args, { env, stdio: ['pipe', log, log] });
  fs.closeSync(log);
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  const server: RunningServer = {
    name,
    pid: child.pid ?? -1,
    port,
    stop: async () => {
      running.delete(server);
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        process.kill(child.pid, 'SIGTERM');
        const stopped = await Promise.race([
          exited(child).then(() => true),
          sleep(stopTimeoutMs).then(() => false),
        ]);
        if (!stopped) {
          process.kill(child.pid, 'SIGKILL');
          await exited(child);
        }
      }
      child.stdin?.destroy();
      if (scratchDir) fs.rmSync(scratchDir, { recursive: true, force: true });
    },
  };
  running.add(server);
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    const failed = await Promise.race([spawnError, sleep(100).then(() => undefined)]);
    if (failed !== undefined || child.exitCode !== null || child.signalCode !== null) {
      await server.stop();
      const reason = failed ? failed.message : `exited (${child.exitCode ?? child.signalCode})`;
      throw new Error(`${name} server ${reason} before serving:\n${tail(logFile)}`);
    }
    if (await accepts(port)) return server;
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`${name} server did not accept on port ${port} in ${readyTimeoutMs} ms`);
    }
  }
}

/** Stops every server still running (on an error or a signal). */
export async function stopAllServers(): Promise<void> {
  await Promise.all([...running].map((server) => server.stop()));
}
