import { enumType, type SendGradsResponse } from '@pserver/proto';
import { ProtoWriter } from './proto-writer';

const outcomes = enumType('PushOutcome').values;

/**
 * A SendGradsResponse's encoding, field by field as protobufjs writes it: shard_epoch (1),
 * outcome (2), skipped_non_finite (3), last_applied_step (4), sparse (5: table 1, rows_updated 2,
 * rows_created 3, rows_rejected 4), version (6).
 */
export function encodePushReply(reply: SendGradsResponse): Buffer {
  const w = new ProtoWriter(32);
  w.tag(1, 0).varint(Number(reply.shardEpoch ?? 0));
  w.tag(2, 0).varint(outcomes[String(reply.outcome)] ?? Number(reply.outcome ?? 0));
  for (const name of reply.skippedNonFinite ?? []) w.string(3, name);
  w.tag(4, 0).varint(Number(reply.lastAppliedStep ?? 0));
  for (const table of reply.sparse ?? []) {
    w.message(5, (t) => {
      t.string(1, table.table ?? '');
      t.tag(2, 0).varint(Number(table.rowsUpdated ?? 0));
      t.tag(3, 0).varint(Number(table.rowsCreated ?? 0));
      t.tag(4, 0).varint(Number(table.rowsRejected ?? 0));
    });
  }
  w.tag(6, 0).varint(Number(reply.version ?? 0));
  return w.finish();
}
