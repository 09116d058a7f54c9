import fs from 'node:fs';
import { inspect, isDeepStrictEqual } from 'node:util';
import { status } from '@grpc/grpc-js';
import fc from 'fast-check';
import { parses, undocumentedAnswer } from './answers';
import type { RawAnswer, RawGrpcClient } from './raw-client';
import { decodeMessage, fuzzInputs, inputBytes, type FuzzInput } from './wire';

/** One request as sent: its messages, and whether the client breaks the call off. */
export interface Sent {
  messages: Buffer[];
  breakOff: boolean;
}

/** One RPC to fuzz: how to generate its inputs and turn one into the bytes sent. */
export interface RpcTarget<I> {
  /** The method's name, e.g. `SendGrads`. */
  method: string;
  kind: 'unary' | 'client-stream' | 'server-stream';
  requestType: string;
  responseType: string;
  inputs: fc.Arbitrary<I>;
  send(input: I): Sent;
  /** Checks an accepted call's response against the input; returns what is wrong, if anything. */
  checkAccepted?(input: I, response: Record<string, unknown>): string | undefined;
}

/** A unary RPC whose messages come from `values`, sent as generated, mutated, or as junk. */
export function unaryTarget<V>(options: {
  method: string;
  requestType: string;
  responseType: string;
  values: fc.Arbitrary<V>;
  encode: (value: V) => Uint8Array;
  checkAccepted?: (value: V, response: Record<string, unknown>) => string | undefined;
}): RpcTarget<FuzzInput<V>> {
  const { checkAccepted } = options;
  return {
    method: options.method,
    kind: 'unary',
    requestType: options.requestType,
    responseType: options.responseType,
    inputs: fuzzInputs(options.values),
    send: (input) => ({ messages: [inputBytes(input, options.encode)], breakOff: false }),
    checkAccepted:
      checkAccepted &&
      ((input, response) =>
        // Only an unmutated message says what was asked for.
        input.kind === 'message' ? checkAccepted(input.value, response) : undefined),
  };
}

/** The server under test, as the fuzzer sees it. */
export interface FuzzSubject<S> {
  /** The gRPC service, e.g. `pserver.v1.ParameterServer`. */
  service: string;
  client: RawGrpcClient;
  /** The server's limit on a received message. */
  maxMessageBytes: number;
  /**
   * Everything a call may change, read through the server (and etcd): equal means unchanged.
   * A `quick` snapshot may leave out what is costly to read (a shard's bytes) and repeat it from
   * the last full one instead.
   */
  snapshot(level?: 'quick' | 'full'): Promise<S>;
  /** Throws unless the process is running and answers. */
  checkAlive(): Promise<void>;
  /** Called after an accepted call and before the next reference snapshot (e.g. to clean up). */
  onAccepted?(method: string, response: Record<string, unknown>, sent: Sent): Promise<void>;
}

/** How one RPC's fuzzing went: cases, answers by status and error code, time. */
export interface FuzzReport {
  method: string;
  cases: number;
  accepted: number;
  /** `OK`, `INVALID_ARGUMENT PSERVER_LENGTH_MISMATCH`, `CANCELLED (broken off)`, … → count. */
  answers: Record<string, number>;
  seconds: number;
  /** Of `seconds`: generating and encoding requests, waiting for answers, taking snapshots. */
  split: { generating: number; calling: number; checking: number };
}

export interface FuzzRunOptions {
  seed: number;
  runs: number;
  /** Check that the process is up every this many cases (and at the end). */
  aliveEvery?: number;
  /**
   * Take a full snapshot after every this many refused calls (and after every accepted one);
   * quick ones in between. Default 1: every call is checked in full. Above 1, a change found by a
   * full check is blamed on the calls since the last one, all listed.
   */
  fullEvery?: number;
}

/**
 * Sends `runs` generated requests of one RPC to a running server, one at a time, and checks each
 * answer: it is documented (`undocumentedAnswer`), an accepted one passes `checkAccepted`, and a
 * rejected one changed nothing (the subject's snapshot equals the one taken after the last
 * accepted call). The process is checked to be up every `aliveEvery` cases. A failure is
 * reported by fast-check with its seed and path, shrunk against the same server.
 */
export async function fuzzRpc<I, S>(
  target: RpcTarget<I>,
  subject: FuzzSubject<S>,
  options: FuzzRunOptions,
): Promise<FuzzReport> {
  const { seed, runs, aliveEvery = 100, fullEvery = 1 } = options;
  const path = `/${subject.service}/${target.method}`;
  const report: FuzzReport = {
    method: target.method,
    cases: 0,
    accepted: 0,
    answers: {},
    seconds: 0,
    split: { generating: 0, calling: 0, checking: 0 },
  };
  const started = performance.now();
  let lap = performance.now();
  const clock = (part: keyof FuzzReport['split']): void => {
    const now = performance.now();
    report.split[part] += (now - lap) / 1000;
    lap = now;
  };
  let reference = await subject.snapshot('full');
  // The refused calls since the last full snapshot, for the message when one finds a change.
  let unchecked: { input: I; verdict: string }[] = [];
  let first: string | undefined;
  const property = fc.asyncProperty(target.inputs, async (input) => {
    const sent = target.send(input);
    clock('generating');
    const answer = await call(subject.client, target.kind, path, sent);
    clock('calling');
    count(report, answer);
    const streamed = answer.streamed.some((m) => !parses(target.responseType, m));
    let failure = streamed
      ? `streamed a message that is not a ${target.responseType}`
      : undocumentedAnswer(answer, {
          requestType: target.requestType,
          responseType: target.responseType,
          messages: sent.messages,
          maxMessageBytes: subject.maxMessageBytes,
        });
    // The reference is renewed whatever the verdict: fast-check's shrinking replays cases against
    // the same server, and each must be judged against the state the one before left.
    const verdict = `${status[answer.status]} ${answer.errorCode ?? ''}`.trim();
    if (answer.status === status.OK && !failure) {
      const response = decodeMessage(target.responseType, answer.body!);
      const wrong = target.checkAccepted?.(input, response);
      if (wrong) failure = `accepted, but ${wrong}`;
      await subject.onAccepted?.(target.method, response, sent);
      reference = await subject.snapshot('full');
      unchecked = [];
    } else {
      unchecked.push({ input, verdict });
      const full = unchecked.length >= fullEvery;
      const before = reference;
      reference = await subject.snapshot(full ? 'full' : 'quick');
      const blamed = unchecked;
      if (full) unchecked = [];
      if (!failure && answer.status !== status.OK && !isDeepStrictEqual(reference, before)) {
        const changes = differences(before, reference).join('; ');
        failure =
          blamed.length > 1
            ? `a call answered ${verdict}, or one of the ${blamed.length - 1} refused before it since the last full check, changed the state: ${changes}; the calls: ${blamed.map((c) => `${fc.stringify(c.input).slice(0, 300)} → ${c.verdict}`).join(' | ')}`
            : `a call answered ${verdict} changed the state: ${changes}`;
      }
    }
    if (failure) {
      first ??= `${fc.stringify(input)}: ${failure}`;
      throw new Error(`${target.method}: ${failure}`);
    }
    if (report.cases % aliveEvery === 0) await subject.checkAlive();
    clock('checking');
  });
  try {
    await fc.assert(property, { seed, numRuns: runs });
  } catch (err) {
    // Shrinking replays cases against a server whose state moved on: keep the original too.
    if (first && err instanceof Error)
      err.message += `\n\nFirst failing case, before shrinking: ${first}`;
    throw err;
  }
  await subject.checkAlive();
  report.seconds = (performance.now() - started) / 1000;
  return report;
}

/** A call of any kind; a server stream is read for its first message, then cancelled. */
async function call(
  client: RawGrpcClient,
  kind: RpcTarget<unknown>['kind'],
  path: string,
  sent: Sent,
): Promise<RawAnswer & { streamed: Buffer[] }> {
  if (kind === 'unary') return { ...(await client.unary(path, sent.messages[0]!)), streamed: [] };
  if (kind === 'client-stream')
    return { ...(await client.clientStream(path, sent.messages, sent.breakOff)), streamed: [] };
  const answer = await client.serverStream(path, sent.messages[0]!, {
    maxMessages: 1,
    quietMs: 25,
  });
  return { ...answer, streamed: answer.messages };
}

function count(report: FuzzReport, answer: RawAnswer): void {
  report.cases++;
  if (answer.status === status.OK) report.accepted++;
  const key =
    answer.status === status.OK
      ? 'OK'
      : answer.errorCode
        ? `${status[answer.status]} ${answer.errorCode}`
        : `${status[answer.status]} (${answer.ending === 'broken-off' ? 'broken off' : 'from gRPC'})`;
  report.answers[key] = (report.answers[key] ?? 0) + 1;
}

/**
 * Where two states differ, as `path: before → after` lines (at most `limit`, values cut short):
 * a readable diff even of states holding megabytes.
 */
export function differences(before: unknown, after: unknown, path = '', limit = 8): string[] {
  if (isDeepStrictEqual(before, after)) return [];
  const isRecord = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !(v instanceof Uint8Array);
  if (isRecord(before) && isRecord(after) && Array.isArray(before) === Array.isArray(after)) {
    const found: string[] = [];
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (found.length >= limit) break;
      found.push(...differences(before[key], after[key], `${path}.${key}`, limit - found.length));
    }
    return found;
  }
  const show = (v: unknown): string =>
    inspect(v, { depth: 2, maxArrayLength: 8, maxStringLength: 120, breakLength: Infinity });
  return [`${path || '(root)'}: ${show(before)} → ${show(after)}`];
}

/** The resident set size of process `pid` in bytes (VmRSS of /proc/<pid>/status). */
export function residentBytes(pid: number): number {
  const line = fs
    .readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  const kib = Number(line?.match(/(\d+)\s*kB/)?.[1]);
  if (!Number.isFinite(kib)) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return kib * 1024;
}

/** A one-line summary of a report, for the test's output. */
export function describeReport(report: FuzzReport): string {
  const rate = report.cases / Math.max(report.seconds, 1e-9);
  const answers = Object.entries(report.answers)
    .sort(([, a], [, b]) => b - a)
    .map(([key, n]) => `${key} ×${n}`)
    .join(', ');
  const { generating, calling, checking } = report.split;
  return (
    `${report.method}: ${report.cases} cases in ${report.seconds.toFixed(1)} s (${rate.toFixed(0)}/s; ` +
    `generating ${generating.toFixed(1)} s, calls ${calling.toFixed(1)} s, checks ${checking.toFixed(1)} s), ` +
    `${report.accepted} accepted; ${answers}`
  );
}
