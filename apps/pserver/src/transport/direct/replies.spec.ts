import fc from 'fast-check';
import { loaderOptions, messageType } from '@pserver/proto';
import { bytesAsHex } from '@pserver/testing';
import { encodeParams } from './params-reply';
import { encodePushReply } from './push-reply';

function decoded(typeName: string, bytes: Uint8Array): unknown {
  const type = messageType(typeName);
  return bytesAsHex(type.toObject(type.decode(bytes), loaderOptions));
}

const uint = fc.oneof(fc.nat(1000), fc.maxSafeNat());
const name = fc.string({ unit: 'grapheme', maxLength: 40 });

describe('the data path’s reply encoders', () => {
  it('encode a SendGradsResponse as protobufjs decodes it', () => {
    const reply = fc.record({
      shardEpoch: uint,
      outcome: fc.constantFrom(
        'PUSH_OUTCOME_UNSPECIFIED',
        'PUSH_OUTCOME_APPLIED',
        'PUSH_OUTCOME_DUPLICATE',
        'PUSH_OUTCOME_ACCUMULATED',
        'PUSH_OUTCOME_DROPPED_LATE',
      ) as fc.Arbitrary<'PUSH_OUTCOME_APPLIED'>,
      skippedNonFinite: fc.array(name, { maxLength: 3 }),
      lastAppliedStep: uint,
      sparse: fc.array(
        fc.record({ table: name, rowsUpdated: uint, rowsCreated: uint, rowsRejected: uint }),
        { maxLength: 3 },
      ),
      version: uint,
    });
    fc.assert(
      fc.property(reply, (r) => {
        expect(decoded('SendGradsResponse', encodePushReply(r))).toEqual(bytesAsHex(r));
      }),
      { numRuns: 300, seed: 424242 },
    );
  });

  it('encode a GetParamsResponse in parts whose concatenation protobufjs decodes back', () => {
    const tensor = fc.record({
      name,
      elementType: fc.constantFrom(
        'ELEMENT_TYPE_FLOAT32',
        'ELEMENT_TYPE_FLOAT64',
        'ELEMENT_TYPE_INT64',
      ) as fc.Arbitrary<'ELEMENT_TYPE_FLOAT32'>,
      shape: fc.array(uint, { maxLength: 4 }),
      content: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
    });
    fc.assert(
      fc.property(
        uint,
        fc.array(tensor, { maxLength: 4 }),
        uint,
        uint,
        (shardEpoch, params, version, minClock) => {
          const parts = encodeParams({ shardEpoch, params, version, minClock });
          // Every content leaves as its own part, never copied.
          for (const p of params) if (p.content.length > 0) expect(parts).toContain(p.content);
          expect(decoded('GetParamsResponse', Buffer.concat(parts))).toEqual(
            bytesAsHex({ shardEpoch, params, version, minClock }),
          );
        },
      ),
      { numRuns: 300, seed: 424242 },
    );
  });
});
