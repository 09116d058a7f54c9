import { messageType } from '@pserver/proto';
import type { TensorSnapshot } from './snapshot';

/**
 * Encodes a tensor record frame as a list of chunks whose large parts (the tensor's content and
 * its optimizer slots) are the snapshot's own buffers, not copies: protobufjs would copy every
 * byte into a new buffer per record. The small parts are encoded by protobufjs; the large
 * `bytes` fields and the enclosing lengths are written here. The result is the same protobuf a
 * single encoder would write, with fields in a different order (any order is valid protobuf).
 */
export function encodeTensorFrame(snapshot: TensorSnapshot): Uint8Array[] {
  const { content, ...tensorRest } = snapshot.tensor;
  const tensor = [encode('Tensor', tensorRest), field(4, content.byteLength), content];
  const record: Uint8Array[] = [...lengthDelimited(1, tensor)];
  if (snapshot.optimizer) record.push(encode('TensorRecord', { optimizer: snapshot.optimizer }));
  if (snapshot.state) {
    const { slots, ...stateRest } = snapshot.state;
    const state: Uint8Array[] = [encode('OptimizerState', stateRest)];
    for (const slot of slots) {
      state.push(
        ...lengthDelimited(2, [
          encode('OptimizerSlot', { name: slot.name }),
          field(2, slot.content.byteLength),
          slot.content,
        ]),
      );
    }
    record.push(...lengthDelimited(3, state));
  }
  const frame = lengthDelimited(2, record);
  return [varint(totalLength(frame)), ...frame];
}

function encode(type: string, value: object): Uint8Array {
  const messageTypeOf = messageType(type);
  return messageTypeOf.encode(messageTypeOf.fromObject(value)).finish();
}

/** A length-delimited field: its key, its length, then its parts. */
function lengthDelimited(fieldNumber: number, parts: Uint8Array[]): Uint8Array[] {
  return [field(fieldNumber, totalLength(parts)), ...parts];
}

/** The key of a length-delimited field (wire type 2) followed by the length. */
function field(fieldNumber: number, length: number): Uint8Array {
  return concat(varint((fieldNumber << 3) | 2), varint(length));
}

function totalLength(parts: Uint8Array[]): number {
  return parts.reduce((total, part) => total + part.byteLength, 0);
}

function varint(value: number): Uint8Array {
  const bytes: number[] = [];
  let v = value;
  while (v >= 0x80) {
    bytes.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  bytes.push(v);
  return Uint8Array.from(bytes);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
}
