import fc from 'fast-check';
import type { RpcTarget } from './fuzz-rpc';
import { unaryTarget } from './fuzz-rpc';
import { gradient, type PserverFuzzModel } from './pserver-requests';
import { repeated, shortText, text, uint32, uint64 } from './values';
import { encodeMessage, fuzzInputs, inputBytes, type FuzzInput } from './wire';

/**
 * The `pserver.v1.Replication` calls as a peer would send them to the pserver under test: its
 * shard index and epoch mostly, members and sequence numbers of every size, and forwards that
 * carry real gradients for the shard's tensors. A pserver that is neither the shard's primary
 * nor a replica of it refuses every one (PSERVER_NOT_REPLICA) and changes nothing.
 */
export function replicationTargets(model: PserverFuzzModel): RpcTarget<FuzzInput<object>>[] {
  const index = uint32([model.shard.index, model.shard.index + 1]);
  const epoch = uint64([model.epoch, model.epoch + 1n, model.epoch - 1n]);
  const member = text(['pserver-1', '', 'x'.repeat(300)]);
  const seq = uint64([0n, 1n, 2n]);
  const fetchSnapshot = fc.record({ index, primaryEpoch: epoch, member });
  const forward = fc.record({
    index,
    primaryEpoch: epoch,
    seq,
    trainerId: uint64([1n, 2n]),
    step: uint64([1n]),
    grads: repeated(gradient(model), { maxLength: 3, hugeLength: 50_000 }),
    inSync: fc.boolean(),
    digest: shortText(['', 'ab'.repeat(32)]),
  });
  return [
    {
      // One batch per stream: the first refusal ends the stream.
      method: 'ForwardStream',
      kind: 'client-stream',
      requestType: 'ForwardBatchRequest',
      responseType: 'ForwardResponse',
      inputs: fuzzInputs(fc.record({ forwards: fc.array(forward, { maxLength: 3 }) })),
      send: (input) => ({
        messages: [inputBytes(input, (value) => encodeMessage('ForwardBatchRequest', value))],
        breakOff: false,
      }),
    },
    unaryTarget({
      method: 'ReplicaLoaded',
      requestType: 'ReplicaLoadedRequest',
      responseType: 'ReplicaLoadedResponse',
      values: fc.record({ index, primaryEpoch: epoch, member, seq }),
      encode: (value) => encodeMessage('ReplicaLoadedRequest', value),
    }),
    {
      method: 'FetchSnapshot',
      kind: 'server-stream',
      requestType: 'FetchSnapshotRequest',
      responseType: 'SnapshotChunk',
      inputs: fuzzInputs(fetchSnapshot),
      send: (input) => ({
        messages: [inputBytes(input, (value) => encodeMessage('FetchSnapshotRequest', value))],
        breakOff: false,
      }),
    },
  ];
}
