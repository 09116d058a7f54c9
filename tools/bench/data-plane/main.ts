/**
 * The pserver's data plane side by side with two reference servers that speak the same contract
 * (a Python grpcio + numpy server and a Go grpc-go server, both in this folder), driven by one
 * Python grpc.aio load driver (driver.py): unary and streamed pushes of 4 MiB blocks, pulls,
 * and 1 KiB pushes, with every server a fresh process, in alternating rounds
 * (python → go → pserver, ROUNDS times). One JSON line per run goes to
 * tmp/bench/data-plane-<date>.jsonl; the tables go to stdout. See README.md beside this file.
 *
 *   npx nx run tools:bench-data-plane
 *   ROUNDS=3 SECONDS=10 ONLY="go pserver" TLS=1 npx nx run tools:bench-data-plane
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkPrerequisites, describeMachine, PrerequisiteError } from './environment';
import {
  buildGoServer,
  goBinaryPath,
  makeCertificates,
  serverNames,
  startServer,
  stopAllServers,
  type Layout,
  type RunningServer,
  type ServerName,
  type TlsFiles,
} from './servers';
import { summarize, type RunRecord } from './summary';

interface Options {
  rounds: number;
  /** Length of each timed phase. */
  seconds: number;
  servers: ServerName[];
  tls: boolean;
}

/** A knob with a value the run cannot use. */
class OptionError extends Error {
  readonly code = 'BENCH_BAD_OPTION';
}

function readOptions(env: NodeJS.ProcessEnv): Options {
  const positive = (name: string, fallback: number, integer: boolean): number => {
    const value = Number(env[name] ?? fallback);
    if (!(value > 0) || (integer && !Number.isInteger(value))) {
      throw new OptionError(
        `${name}=${env[name]}: expected a positive ${integer ? 'integer' : 'number'}`,
      );
    }
    return value;
  };
  const only = (env.ONLY ?? '').split(/[\s,]+/).filter(Boolean);
  for (const name of only) {
    if (!(serverNames as readonly string[]).includes(name)) {
      throw new OptionError(`ONLY=${env.ONLY}: ${name} is not one of ${serverNames.join(', ')}`);
    }
  }
  return {
    rounds: positive('ROUNDS', 3, true),
    seconds: positive('SECONDS', 10, false),
    servers: serverNames.filter((name) => only.length === 0 || only.includes(name)),
    tls: ['1', 'true', 'yes', 'on'].includes((env.TLS ?? '').toLowerCase()),
  };
}

interface DriverResult {
  exitCode: number | null;
  output?: Record<string, unknown>;
  lastError?: string;
}

/** Runs driver.py against `server`; its progress lines go to stderr, indented. */
async function runDriver(
  layout: Layout,
  server: RunningServer,
  seconds: number,
  signal: AbortSignal,
  tls?: TlsFiles,
): Promise<DriverResult> {
  const args = [
    path.join(layout.root, 'tools/bench/data-plane/driver.py'),
    ...['--target', `127.0.0.1:${server.port}`, '--server-pid', String(server.pid)],
    ...['--seconds', String(seconds)],
    ...(tls ? ['--tls-ca', tls.ca, '--tls-cert', tls.clientCert, '--tls-key', tls.clientKey] : []),
  ];
  const child = spawn(layout.python, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let lastError: string | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n').filter(Boolean)) {
      process.stderr.write(`    ${line}\n`);
      lastError = line;
    }
  });
  const stop = (): void => void child.kill('SIGTERM');
  signal.addEventListener('abort', stop, { once: true });
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code));
  }).finally(() => signal.removeEventListener('abort', stop));
  const json = stdout.trim().split('\n').pop();
  const output = json ? (JSON.parse(json) as Record<string, unknown>) : undefined;
  return { exitCode, output, lastError };
}

async function measure(
  name: ServerName,
  round: number,
  layout: Layout,
  options: Options,
  logDir: string,
  signal: AbortSignal,
  tls?: TlsFiles,
): Promise<RunRecord> {
  const date = new Date().toISOString();
  const loadavg1Before = os.loadavg()[0]!;
  console.error(`round ${round}: ${name}${tls ? ' (mutual TLS)' : ''}`);
  const logFile = path.join(logDir, `${name}-round-${round}.log`);
  const record = { date, round, server: name, tls: tls !== undefined, loadavg1Before };
  let server: RunningServer;
  try {
    server = await startServer(name, layout, logFile, tls);
  } catch (err) {
    // Recorded, and the rounds go on: one server that cannot start spoils no other's figures.
    const error = err instanceof Error ? err.message : String(err);
    console.error(`    ${error.replaceAll('\n', '\n    ')}`);
    return { ...record, ok: false, exitCode: null, error };
  }
  let result: DriverResult;
  try {
    result = await runDriver(layout, server, options.seconds, signal, tls);
  } finally {
    await server.stop();
  }
  return {
    ...record,
    ok: result.exitCode === 0 && result.output !== undefined,
    exitCode: result.exitCode,
    ...(result.exitCode === 0 ? {} : { error: result.lastError }),
    ...result.output,
  };
}

async function main(): Promise<number> {
  const options = readOptions(process.env);
  const root = process.cwd();
  if (!fs.existsSync(path.join(root, 'nx.json'))) {
    throw new Error('run from the workspace root (npx nx run tools:bench-data-plane)');
  }
  const wantsGo = options.servers.includes('go');
  const toolchain = checkPrerequisites(root, {
    go: wantsGo,
    pserver: options.servers.includes('pserver'),
    tls: options.tls,
  });
  console.log(describeMachine(root, toolchain));
  console.log(
    `servers: ${options.servers.join(' → ')}, ${options.rounds} round${options.rounds === 1 ? '' : 's'}, ${options.seconds} s per phase` +
      (options.tls ? ', mutual TLS' : ', plaintext'),
  );
  if (wantsGo) buildGoServer(root);

  const layout: Layout = { root, python: toolchain.python, goBinary: goBinaryPath(root) };
  const outDir = path.join(root, 'tmp/bench');
  fs.mkdirSync(outDir, { recursive: true });
  const outFile = path.join(outDir, `data-plane-${new Date().toISOString().slice(0, 10)}.jsonl`);
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-data-plane-logs-'));
  const tls = options.tls ? makeCertificates(root) : undefined;
  const records: RunRecord[] = [];
  try {
    for (let round = 1; round <= options.rounds && !interrupted.signal.aborted; round++) {
      for (const name of options.servers) {
        const record = await measure(name, round, layout, options, logDir, interrupted.signal, tls);
        if (interrupted.signal.aborted) break;
        records.push(record);
        fs.appendFileSync(outFile, `${JSON.stringify(record)}\n`);
      }
    }
  } finally {
    if (tls) fs.rmSync(tls.dir, { recursive: true, force: true });
  }
  if (interrupted.signal.aborted) {
    fs.rmSync(logDir, { recursive: true, force: true });
    console.error('interrupted: every server stopped');
    return 130;
  }

  console.log(`\n${summarize(records, options.servers)}`);
  console.log(`\nruns: ${path.relative(root, outFile)} (appended)`);
  const failed = records.filter((r) => !r.ok);
  for (const r of failed) {
    console.error(`FAILED: ${r.server}, round ${r.round}: exit ${r.exitCode}: ${r.error ?? ''}`);
  }
  if (failed.length === 0) fs.rmSync(logDir, { recursive: true, force: true });
  else console.error(`server logs: ${logDir}`);
  return failed.length === 0 ? 0 : 1;
}

// A signal stops the driver; the run's own clean-up then stops its server by PID.
const interrupted = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => interrupted.abort());
}

main().then(
  (code) => process.exit(code),
  async (err: unknown) => {
    const known = err instanceof PrerequisiteError || err instanceof OptionError;
    console.error(known ? `bench-data-plane: ${err.message}` : err);
    await stopAllServers();
    process.exit(1);
  },
);
