import { enumType, type GetParamsResponse } from '@pserver/proto';
import { ProtoWriter, varintLength } from './proto-writer';

const elementTypeNumbers = enumType('ElementType').values;

/**
 * A GetParamsResponse as the parts of its encoding: the small fields in one buffer, each
 * tensor's content as it is (no copy into a message buffer). Field by field what protobufjs
 * writes: shard_epoch (1), then per tensor (2) its name (1), element type (2), packed shape (3)
 * and content (4), then version (3) and min_clock (4).
 */
export function encodeParams(reply: GetParamsResponse): Uint8Array[] {
  const w = new ProtoWriter(64);
  const contents: { at: number; content: Uint8Array }[] = [];
  w.tag(1, 0).varint(Number(reply.shardEpoch ?? 0));
  for (const param of reply.params ?? []) {
    const name = Buffer.from(param.name ?? '');
    const type = elementTypeNumbers[String(param.elementType)] ?? Number(param.elementType ?? 0);
    const shape = (param.shape ?? []).map(Number);
    const shapeBytes = shape.reduce((total, d) => total + varintLength(d), 0);
    const content = param.content as Uint8Array;
    const tensorBytes =
      1 +
      varintLength(name.length) +
      name.length +
      1 +
      varintLength(type) +
      (shape.length > 0 ? 1 + varintLength(shapeBytes) + shapeBytes : 0) +
      1 +
      varintLength(content.byteLength) +
      content.byteLength;
    w.tag(2, 2).varint(tensorBytes);
    w.bytes(1, name);
    w.tag(2, 0).varint(type);
    if (shape.length > 0) {
      w.tag(3, 2).varint(shapeBytes);
      for (const d of shape) w.varint(d);
    }
    w.tag(4, 2).varint(content.byteLength);
    contents.push({ at: w.length, content });
  }
  w.tag(3, 0).varint(Number(reply.version ?? 0));
  w.tag(4, 0).varint(Number(reply.minClock ?? 0));
  const head = w.finish();
  const parts: Uint8Array[] = [];
  let from = 0;
  for (const { at, content } of contents) {
    parts.push(head.subarray(from, at), content);
    from = at;
  }
  if (from < head.length || parts.length === 0) parts.push(head.subarray(from));
  return parts;
}
