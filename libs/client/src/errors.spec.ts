import { status } from '@grpc/grpc-js';
import { ErrorCode } from '@pserver/proto';
import { RpcError } from '@pserver/rpc';
import {
  asMessageTooLarge,
  ClientError,
  clientErrorCodes,
  isRefused,
  isRetryable,
  isShardUnavailable,
  isStale,
} from './errors';

const rpc = (code: status, domain?: string): RpcError =>
  new RpcError(code, domain as RpcError['code'], `${status[code]} ${domain ?? ''}`, {});

describe('client error codes', () => {
  it("are exactly the contract's CLIENT_* codes", () => {
    const contract = Object.keys(ErrorCode).filter((name) => name.startsWith('CLIENT_'));
    expect([...clientErrorCodes]).toEqual(contract);
    expect(clientErrorCodes).toEqual(
      expect.arrayContaining(['CLIENT_MESSAGE_TOO_LARGE', 'CLIENT_SHAPE_MISMATCH']),
    );
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
    expect(asMessageTooLarge(overloaded, 'SendGrads', 1)).toBe(overloaded);
    expect(asMessageTooLarge(lost, 'SendGrads', 1)).toBe(lost);
  });
});
