import { enumType, type GetParamsResponse } from '@pserver/proto';

const elementTypeNumbers = enumType('ElementType').values;

/**
 * A GetParamsResponse as the parts of its encoding: the small fields of each tensor in one
 * buffer, its content as it is (no copy into a message buffer). Field by field what protobufjs
 * writes: shard_epoch (1), then per tensor (2) its name (1), element type (2), packed shape (3)
 * and content (4).
 */
export function encodeParams(reply: GetParamsResponse): Uint8Array[] {
  const params = reply.params ?? [];
  let headBytes = 11;
  for (const param of params) {
    // Every tag and length at its longest: tensor, name, element type, shape, content.
    headBytes += 11 + 11 + Buffer.byteLength(param.name ?? '') + 11 + 11;
    headBytes += 10 * (param.shape?.length ?? 0) + 11;
  }
  const head = Buffer.allocUnsafe(headBytes);
  let at = 0;
  const varint = (value: number): void => {
    while (value >= 0x80) {
      head[at++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    head[at++] = value;
  };
  head[at++] = 0x08;
  varint(Number(reply.shardEpoch ?? 0));
  const parts: Uint8Array[] = [];
  let segment = 0;
  for (const param of params) {
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
    head[at++] = 0x12;
    varint(tensorBytes);
    head[at++] = 0x0a;
    varint(name.length);
    at += name.copy(head, at);
    head[at++] = 0x10;
    varint(type);
    if (shape.length > 0) {
      head[at++] = 0x1a;
      varint(shapeBytes);
      for (const d of shape) varint(d);
    }
    head[at++] = 0x22;
    varint(content.byteLength);
    parts.push(head.subarray(segment, at), content);
    segment = at;
  }
  if (at > segment) parts.push(head.subarray(segment, at));
  return parts;
}

function varintLength(value: number): number {
  let length = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    length++;
  }
  return length;
}
