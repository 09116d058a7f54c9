import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { errorTable } from './error-table';
import { metadataKeys } from './metadata-keys';
import {
  boundedDetails,
  fromServiceError,
  internalErrorMessage,
  maxDetailsBytes,
  toStatus,
  type CodedError,
} from './status-mapping';

// A code of a server newer than this client, built from parts: the contract's check that sources
// name only codes of the enum (contract.spec.ts) passes over it.
const newerCode = ['PSERVER', 'NEWER', 'CODE'].join('_');

function codedError(code: string, message: string, facts?: CodedError['facts']): CodedError {
  return Object.assign(new Error(message), { code, facts });
}

/** What a client receives for a status a server answered with. */
function asReceived(answer: ReturnType<typeof toStatus>): ServiceError {
  return Object.assign(new Error(`${answer.code} ${status[answer.code]}: ${answer.details}`), {
    code: answer.code,
    details: answer.details,
    metadata: answer.metadata,
  });
}

describe('toStatus', () => {
  it.each([
    ['PSERVER_LENGTH_MISMATCH', status.INVALID_ARGUMENT],
    ['PSERVER_UNKNOWN_TENSOR', status.NOT_FOUND],
    ['PSERVER_ALREADY_INITIALIZED', status.FAILED_PRECONDITION],
    ['PSERVER_STALE_EPOCH', status.ABORTED],
    ['MASTER_NOT_LEADER', status.UNAVAILABLE],
    ['PSERVER_FENCED', status.UNAVAILABLE],
    ['PSERVER_OVERLOADED', status.RESOURCE_EXHAUSTED],
    ['CHECKPOINT_CORRUPT', status.DATA_LOSS],
    // A checkpoint that fails to write for a reason that may pass: try again later.
    ['CHECKPOINT_IO', status.UNAVAILABLE],
    // A checkpoint of another shard: retrying does not help until an operator acts.
    ['CHECKPOINT_INCOMPATIBLE', status.FAILED_PRECONDITION],
    ['PSERVER_SHAPE_MISMATCH', status.INVALID_ARGUMENT],
    ['PSERVER_REPLY_TOO_LARGE', status.INVALID_ARGUMENT],
  ])('maps %s to status %s, keeping the message and the code', (code, expected) => {
    const answer = toStatus(codedError(code, `gradient w: 12 bytes, expected 16`));
    expect(answer).toMatchObject({
      code: expected,
      details: 'gradient w: 12 bytes, expected 16',
      expected: true,
    });
    expect(answer.metadata.get(metadataKeys.errorCode)).toEqual([code]);
  });

  it('puts facts in trailing metadata', () => {
    const answer = toStatus(
      codedError('PSERVER_STALE_EPOCH', 'stale', {
        shardEpoch: 42,
        leader: '10.0.0.1:8200',
        retryAfterMs: 50,
      }),
    );
    expect(answer.metadata.get(metadataKeys.shardEpoch)).toEqual(['42']);
    expect(answer.metadata.get(metadataKeys.leader)).toEqual(['10.0.0.1:8200']);
    expect(answer.metadata.get(metadataKeys.retryAfterMs)).toEqual(['50']);
  });

  it.each([
    ['an error with a code outside the table', codedError('ENOENT', '/secret/path: no such file')],
    ['a plain error', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['a thrown string', 'boom'],
  ])('answers %s INTERNAL with a generic message', (_what, err) => {
    const answer = toStatus(err);
    expect(answer).toMatchObject({
      code: status.INTERNAL,
      details: internalErrorMessage,
      expected: false,
    });
    expect(answer.metadata.getMap()).toEqual({});
  });

  it('cuts a message that names a huge value to what a trailer carries, keeping code and facts', () => {
    // A shape of a million dimensions, named in full: megabytes that no client reads as a trailer.
    const message = `param w: shape [${Array(1_000_000).fill(7).join(', ')}] holds too many elements`;
    const answer = toStatus(codedError('PSERVER_LENGTH_MISMATCH', message, { retryAfterMs: 5 }));
    expect(encodeURI(answer.details).length).toBeLessThanOrEqual(maxDetailsBytes);
    expect(answer.details.startsWith('param w: shape [7, 7, 7')).toBe(true);
    expect(answer.details.endsWith('…')).toBe(true);
    expect(answer.metadata.get(metadataKeys.errorCode)).toEqual(['PSERVER_LENGTH_MISMATCH']);
    expect(answer.metadata.get(metadataKeys.retryAfterMs)).toEqual(['5']);
  });

  it.each([
    ['emoji (surrogate pairs)', '🙂'],
    ['CJK', '名'],
    ['ASCII that percent-encodes', '%'],
  ])('cuts a long message of %s at a character boundary', (_what, unit) => {
    const details = toStatus(codedError('PSERVER_INVALID_NAME', unit.repeat(100_000))).details;
    expect(() => encodeURI(details)).not.toThrow();
    expect(encodeURI(details).length).toBeLessThanOrEqual(maxDetailsBytes);
    expect(details.slice(0, -1)).toBe(unit.repeat((details.length - 1) / unit.length));
  });

  it('keeps a short message whole, a lone surrogate replaced (encodeURI throws on one)', () => {
    expect(toStatus(codedError('PSERVER_INVALID_NAME', 'names: "w" is empty')).details).toBe(
      'names: "w" is empty',
    );
    expect(boundedDetails('name \uD83D cut')).toBe('name \uFFFD cut');
    expect(boundedDetails('a \uDE42 b \uD83D\uDE42')).toBe('a \uFFFD b 🙂');
  });

  it('maps every code of the table to a status other than OK and INTERNAL', () => {
    for (const code of Object.values(errorTable)) {
      expect([status.OK, status.INTERNAL, status.UNKNOWN]).not.toContain(code);
    }
  });
});

describe('fromServiceError', () => {
  it('gives the client back the code, the message and the facts', () => {
    const received = fromServiceError(
      asReceived(toStatus(codedError('PSERVER_STALE_EPOCH', 'epoch 3 < 5', { shardEpoch: 5 }))),
    );
    expect(received).toMatchObject({
      status: status.ABORTED,
      code: 'PSERVER_STALE_EPOCH',
      codeName: 'PSERVER_STALE_EPOCH',
      message: 'epoch 3 < 5',
      facts: { shardEpoch: 5 },
    });
  });

  it('leaves the code undefined for a transport error without trailers', () => {
    const err = Object.assign(new Error('14 UNAVAILABLE: No connection established'), {
      code: status.UNAVAILABLE,
      details: 'No connection established',
      metadata: new Metadata(),
    });
    expect(fromServiceError(err)).toMatchObject({
      status: status.UNAVAILABLE,
      code: undefined,
      codeName: undefined,
      facts: {},
    });
  });

  it('keeps a code newer than this client as its name, outside the typed code', () => {
    const metadata = new Metadata();
    metadata.set(metadataKeys.errorCode, newerCode);
    const err = Object.assign(new Error('x'), { code: status.UNAVAILABLE, details: 'x', metadata });
    expect(fromServiceError(err)).toMatchObject({
      status: status.UNAVAILABLE,
      code: undefined,
      codeName: newerCode,
    });
  });

  it('ignores a malformed number in the trailers', () => {
    const metadata = new Metadata();
    metadata.set(metadataKeys.shardEpoch, 'soon');
    const err = Object.assign(new Error('x'), { code: status.ABORTED, details: 'x', metadata });
    expect(fromServiceError(err).facts).toEqual({});
  });
});
