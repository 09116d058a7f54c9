import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { ErrorCode } from '@pserver/proto';
import { RpcError } from '@pserver/rpc';
import {
  asMessageTooLarge,
  clientActionOf,
  ClientError,
  clientErrorCodes,
  type ClientErrorCode,
  isRefused,
  isResendStep,
  isRetryable,
  isShardUnavailable,
  isStale,
} from './errors';

// A code of a server newer than this client, built from parts: the contract's check that sources
// name only codes of the enum (contract.spec.ts) passes over it.
const newerCode = ['PSERVER', 'NEWER', 'CODE'].join('_');

const rpc = (code: status, domain?: string): RpcError =>
  new RpcError(code, domain as RpcError['code'], `${status[code]} ${domain ?? ''}`, {});

/** An error of a server newer than this client: its code is not in this client's enum. */
const newer = (code: status): RpcError =>
  new RpcError(code, undefined, 'newer', {}, { codeName: newerCode });

type StatusName = Exclude<keyof typeof status, 'OK'>;

// The contract's rules as written, read as every client's tests read them.
const rules = JSON.parse(
  fs.readFileSync(
    path.join(__dirname, '..', '..', '..', 'proto', 'testdata', 'error_codes.json'),
    'utf8',
  ),
) as {
  codes: Record<string, { status: StatusName | null; action: string }>;
  statuses: Record<StatusName, { without_code: string; unknown_code: string }>;
};

describe('client error codes', () => {
  it("are exactly the contract's CLIENT_* codes", () => {
    const contract = Object.keys(ErrorCode).filter((name) => name.startsWith('CLIENT_'));
    expect([...clientErrorCodes]).toEqual(contract);
    expect(clientErrorCodes).toEqual(
      expect.arrayContaining(['CLIENT_MESSAGE_TOO_LARGE', 'CLIENT_SHAPE_MISMATCH']),
    );
  });
});

/** `err`'s action is `action`, and each predicate is true exactly for the actions it names. */
function expectAction(err: unknown, action: string): void {
  expect(clientActionOf(err)).toBe(action);
  expect({
    retryable: isRetryable(err),
    stale: isStale(err),
    resendStep: isResendStep(err),
    shardUnavailable: isShardUnavailable(err),
    refused: isRefused(err),
  }).toEqual({
    retryable: action === 'RETRY' || action === 'BACK_OFF',
    stale: action === 'RERUN_STEP',
    resendStep: action === 'RESEND_PREVIOUS_STEP',
    shardUnavailable: action === 'WAIT_FOR_SHARD',
    refused: action === 'REFUSED',
  });
}

describe("the contract's action on each error (proto/testdata/error_codes.json)", () => {
  const codes = Object.entries(rules.codes);

  it.each(codes.filter(([, rule]) => rule.status !== null))('%s, with its status', (code, rule) =>
    expectAction(rpc(status[rule.status!], code), rule.action),
  );

  it.each(codes.filter(([, rule]) => rule.status === null))(
    '%s, raised by the client',
    (code, rule) => expectAction(new ClientError(code as ClientErrorCode, 'x'), rule.action),
  );

  it.each(Object.entries(rules.statuses))(
    '%s without a code, and with a code newer than this client',
    (name, rule) => {
      expectAction(rpc(status[name as StatusName]), rule.without_code);
      expectAction(newer(status[name as StatusName]), rule.unknown_code);
    },
  );

  it("has no action for an error that is neither a server's nor the client's", () => {
    expect(clientActionOf(new Error('plain'))).toBeUndefined();
    expect(isRetryable(new Error('plain'))).toBe(false);
  });
});

describe('the predicates', () => {
  it.each([
    ['ABORTED (a stale epoch)', true, rpc(status.ABORTED, 'PSERVER_STALE_EPOCH')],
    ['PSERVER_WRONG_SHARD', true, rpc(status.INVALID_ARGUMENT, 'PSERVER_WRONG_SHARD')],
    ['CLIENT_STALE_VIEW', true, new ClientError('CLIENT_STALE_VIEW', 'changed')],
    ['UNAVAILABLE', false, rpc(status.UNAVAILABLE)],
    ['CLIENT_STEP_FAILED', false, new ClientError('CLIENT_STEP_FAILED', 'late')],
  ])('isStale: %s → %s', (_name, expected, err) => expect(isStale(err)).toBe(expected));

  it.each([
    ['UNAUTHENTICATED', true, rpc(status.UNAUTHENTICATED, 'AUTH_UNAUTHENTICATED')],
    ['PERMISSION_DENIED', true, rpc(status.PERMISSION_DENIED, 'AUTH_PERMISSION_DENIED')],
    ['UNAUTHENTICATED from a proxy, no code', true, rpc(status.UNAUTHENTICATED)],
    ['INVALID_ARGUMENT', false, rpc(status.INVALID_ARGUMENT, 'PSERVER_LENGTH_MISMATCH')],
  ])('isRefused: %s → %s', (_name, expected, err) => expect(isRefused(err)).toBe(expected));

  it.each([
    ['PSERVER_NOT_SERVING', true, rpc(status.UNAVAILABLE, 'PSERVER_NOT_SERVING')],
    ['PSERVER_FENCED', true, rpc(status.UNAVAILABLE, 'PSERVER_FENCED')],
    ['PSERVER_SHUTTING_DOWN', true, rpc(status.UNAVAILABLE, 'PSERVER_SHUTTING_DOWN')],
    ['UNAVAILABLE without a code (connection lost)', false, rpc(status.UNAVAILABLE)],
  ])('isShardUnavailable: %s → %s', (_name, expected, err) =>
    expect(isShardUnavailable(err)).toBe(expected),
  );

  it.each([
    ['UNAVAILABLE without a code', true, rpc(status.UNAVAILABLE)],
    ['DEADLINE_EXCEEDED', true, rpc(status.DEADLINE_EXCEEDED)],
    ['DEADLINE_EXCEEDED with its code', true, rpc(status.DEADLINE_EXCEEDED, 'DEADLINE_EXCEEDED')],
    ['CANCELLED', true, rpc(status.CANCELLED)],
    ['INTERNAL without a code', true, rpc(status.INTERNAL)],
    ['PSERVER_OVERLOADED', true, rpc(status.RESOURCE_EXHAUSTED, 'PSERVER_OVERLOADED')],
    ['CHECKPOINT_NO_SPACE', true, rpc(status.RESOURCE_EXHAUSTED, 'CHECKPOINT_NO_SPACE')],
    [
      'PSERVER_TABLE_FULL (waiting does not help)',
      false,
      rpc(status.RESOURCE_EXHAUSTED, 'PSERVER_TABLE_FULL'),
    ],
    ["gRPC's own RESOURCE_EXHAUSTED (message too large)", false, rpc(status.RESOURCE_EXHAUSTED)],
    ['UNAVAILABLE with a domain code', false, rpc(status.UNAVAILABLE, 'PSERVER_NOT_SERVING')],
    ['INVALID_ARGUMENT', false, rpc(status.INVALID_ARGUMENT)],
    ['UNAUTHENTICATED', false, rpc(status.UNAUTHENTICATED)],
    ['a ClientError', false, new ClientError('CLIENT_MESSAGE_TOO_LARGE', 'big')],
  ])('isRetryable: %s → %s', (_name, expected, err) => expect(isRetryable(err)).toBe(expected));
});

describe('asMessageTooLarge', () => {
  it("turns gRPC's own RESOURCE_EXHAUSTED into CLIENT_MESSAGE_TOO_LARGE naming the limit", () => {
    const err = asMessageTooLarge(rpc(status.RESOURCE_EXHAUSTED), 'GetParams', 1024);
    expect(err).toBeInstanceOf(ClientError);
    expect(err).toMatchObject({ code: 'CLIENT_MESSAGE_TOO_LARGE' });
    expect((err as Error).message).toMatch(/maxMessageBytes is 1024/);
  });

  it('leaves a RESOURCE_EXHAUSTED with a domain code and every other error alone', () => {
    const overloaded = rpc(status.RESOURCE_EXHAUSTED, 'PSERVER_OVERLOADED');
    const lost = rpc(status.UNAVAILABLE);
    const fromNewer = newer(status.RESOURCE_EXHAUSTED);
    expect(asMessageTooLarge(overloaded, 'SendGrads', 1)).toBe(overloaded);
    expect(asMessageTooLarge(fromNewer, 'SendGrads', 1)).toBe(fromNewer);
    expect(asMessageTooLarge(lost, 'SendGrads', 1)).toBe(lost);
  });
});
