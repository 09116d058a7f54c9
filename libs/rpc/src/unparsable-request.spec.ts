import { status } from '@grpc/grpc-js';
import { messageType } from '@pserver/proto';
import { metadataKeys } from './metadata-keys';
import { masterService, parameterServerService } from './services';
import { toStatus } from './status-mapping';
import { parsed, UnparsableRequest, UnparsableRequestError } from './unparsable-request';

describe('requests that do not parse', () => {
  // A length prefix (of field 3, a message or unknown in both requests) that runs past the end,
  // and wire type 7 (there is none).
  const garbage = [Buffer.from([0x1a, 0x09, 0x0a, 0x05, 0x61]), Buffer.from([0x0f])];

  it.each(garbage)('decode to an UnparsableRequest instead of throwing (%#)', (bytes) => {
    expect(parameterServerService.SendGrads.requestDeserialize(bytes)).toBeInstanceOf(
      UnparsableRequest,
    );
    expect(masterService.RegisterTrainer.requestDeserialize(bytes)).toBeInstanceOf(
      UnparsableRequest,
    );
  });

  it('leave valid requests as the loader decodes them', () => {
    const type = messageType('GetParamsRequest');
    const bytes = Buffer.from(type.encode({ names: ['w'], context: { shardEpoch: 3 } }).finish());
    expect(parameterServerService.GetParams.requestDeserialize(bytes)).toMatchObject({
      names: ['w'],
      context: { shardEpoch: 3, trainerId: 0 },
    });
  });

  it('are answered INVALID_ARGUMENT with RPC_UNPARSABLE_MESSAGE, naming the method', () => {
    const request = parameterServerService.SendGrads.requestDeserialize(garbage[0]!);
    let thrown: unknown;
    try {
      parsed('SendGrads', request);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UnparsableRequestError);
    const answer = toStatus(thrown);
    expect(answer).toMatchObject({ code: status.INVALID_ARGUMENT, expected: true });
    expect(answer.details).toMatch(/^SendGrads: the request is not a valid protobuf message/);
    expect(answer.metadata.get(metadataKeys.errorCode)).toEqual(['RPC_UNPARSABLE_MESSAGE']);
  });
});
