import { messageType, packageDefinition } from './descriptor';
import type { OptimizerConfig__Output } from './generated/pserver/v1/OptimizerConfig';
import type {
  SendGradsRequest,
  SendGradsRequest__Output,
} from './generated/pserver/v1/SendGradsRequest';
import { loaderOptions } from './loader-options';

function roundTrip<T>(name: string, value: object): T {
  const definition = packageDefinition[`pserver.v1.${name}`] as unknown as {
    serialize: (v: object) => Buffer;
    deserialize: (b: Buffer) => T;
  };
  return definition.deserialize(definition.serialize(value));
}

describe('packageDefinition', () => {
  it('has both services with every method', () => {
    const service = (name: string): string[] =>
      Object.keys(packageDefinition[`pserver.v1.${name}`] as object).sort();
    expect(service('ParameterServer')).toEqual(
      [
        'Drain',
        'FinishInitParams',
        'GetParams',
        'GetRows',
        'GetShardStatus',
        'InitParam',
        'InitTable',
        'ListParams',
        'SaveCheckpoint',
        'SendGrads',
        'SendGradsStream',
      ].sort(),
    );
    expect(service('Master')).toContain('WatchCluster');
    expect(service('Master')).toContain('SetDesiredShards');
    expect(service('Master')).toContain('FinishJob');
  });

  it('carries tensor bytes through gRPC serialization unchanged', () => {
    const content = Buffer.from(new Float32Array([1.5, -2, Number.MIN_VALUE]).buffer);
    const request: SendGradsRequest = {
      context: { trainerId: 7, step: 3, shardEpoch: 12 },
      grads: [{ name: 'w@0', elementType: 'ELEMENT_TYPE_FLOAT32', content }],
    };
    const decoded = roundTrip<SendGradsRequest__Output>('SendGradsRequest', request);
    expect(decoded.context).toEqual({ trainerId: 7, pass: 0, step: 3, shardEpoch: 12 });
    expect(decoded.grads[0]?.elementType).toBe('ELEMENT_TYPE_FLOAT32');
    expect(Buffer.compare(decoded.grads[0]?.content ?? Buffer.alloc(0), content)).toBe(0);
  });

  it('tells an unset optional hyperparameter from an explicit 0', () => {
    const unset = roundTrip<OptimizerConfig__Output>('OptimizerConfig', { adam: {} });
    expect(unset.algorithm).toBe('adam');
    expect(unset.adam?.beta1).toBeUndefined();
    const zero = roundTrip<OptimizerConfig__Output>('OptimizerConfig', { adam: { beta1: 0 } });
    expect(zero.adam?.beta1).toBe(0);
    expect(zero.adam?._beta1).toBe('beta1');
  });
});

describe('messageType', () => {
  it('writes and reads length-delimited checkpoint frames, 64-bit values exact', () => {
    const Frame = messageType('CheckpointFrame');
    const header = {
      header: { formatVersion: 1, shardIndex: 2, createdUnixNs: '1764460800123456789' },
    };
    const bytes = Frame.encodeDelimited(Frame.fromObject(header)).finish();
    const decoded = Frame.toObject(Frame.decodeDelimited(bytes), {
      ...loaderOptions,
      longs: String,
    });
    expect(decoded.frame).toBe('header');
    expect(decoded.header.createdUnixNs).toBe('1764460800123456789');
    expect(decoded.header.shardIndex).toBe(2);
  });
});
