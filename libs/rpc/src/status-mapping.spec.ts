import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { errorTable } from './error-table';
import { metadataKeys } from './metadata-keys';
import {
  fromServiceError,
  internalErrorMessage,
  toStatus,
  type CodedError,
} from './status-mapping';

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
      facts: {},
    });
  });

  it('ignores a malformed number in the trailers', () => {
    const metadata = new Metadata();
    metadata.set(metadataKeys.shardEpoch, 'soon');
    const err = Object.assign(new Error('x'), { code: status.ABORTED, details: 'x', metadata });
    expect(fromServiceError(err).facts).toEqual({});
  });
});
