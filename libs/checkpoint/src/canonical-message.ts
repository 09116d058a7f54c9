import { messageType } from '@pserver/proto';
import { CheckpointError } from './errors';

type MessageType = ReturnType<typeof messageType>;
type Field = MessageType['fieldsArray'][number];

const longTypes = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

/**
 * The deterministic protobuf encoding of a decoded message of `pserver.v1` (a `TableSpec`, an
 * `OptimizerConfig`): fields in field-number order; a field with implicit presence only when it
 * is not its zero value (0, false, "", empty bytes, the enum's 0 value; -0.0 counts as set);
 * a field with explicit presence (`optional`, a oneof member, a message) whenever it is set;
 * repeated fields packed where proto3 packs them; no unknown fields. It is what Go's
 * `proto.MarshalOptions{Deterministic: true}` and Python's `SerializeToString(deterministic=True)`
 * give for the same message, and the same bytes whether a writer wrote a zero field or left it
 * out. Maps have no canonical order here: a message holding one is refused.
 */
export function canonicalMessage(typeName: string, value: object): Uint8Array {
  const type = messageType(typeName);
  return type.encode(type.fromObject(withoutDefaults(type, value, typeName))).finish();
}

/** `value` with every implicit-presence field at its zero value left out, recursively. */
function withoutDefaults(type: MessageType, value: object, at: string): Record<string, unknown> {
  const given = value as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    field.resolve();
    const v = given[field.name];
    const where = `${at}.${field.name}`;
    if (v === undefined || v === null) continue;
    if (field.map)
      throw new CheckpointError('CHECKPOINT_INCOMPATIBLE', `${where}: a map has no canonical form`);
    const nested = messageOf(field);
    if (field.repeated) {
      const items = v as unknown[];
      if (items.length === 0) continue;
      kept[field.name] = items.map((item) => canonicalValue(field, nested, item, where));
      continue;
    }
    if (nested) {
      kept[field.name] = withoutDefaults(nested, v as object, where);
      continue;
    }
    const scalar = canonicalValue(field, undefined, v, where);
    if (field.partOf || !isZero(field, scalar)) kept[field.name] = scalar;
  }
  return kept;
}

function canonicalValue(
  field: Field,
  nested: MessageType | undefined,
  value: unknown,
  where: string,
): unknown {
  if (nested) return withoutDefaults(nested, value as object, where);
  // Decoded 64-bit integers are numbers: one beyond 2^53 may already have lost its low bits.
  if (longTypes.has(field.type) && typeof value === 'number' && !Number.isSafeInteger(value))
    throw new CheckpointError(
      'CHECKPOINT_INCOMPATIBLE',
      `${where}: ${value} is beyond 2^53, not exact as read`,
    );
  return value;
}

function messageOf(field: Field): MessageType | undefined {
  const resolved = field.resolvedType;
  return resolved && 'fieldsArray' in resolved ? resolved : undefined;
}

function isZero(field: Field, value: unknown): boolean {
  const resolved = field.resolvedType;
  if (resolved && 'values' in resolved)
    return value === 0 || (typeof value === 'string' && resolved.values[value] === 0);
  if (typeof value === 'number') return Object.is(value, 0);
  if (typeof value === 'boolean') return !value;
  if (typeof value === 'string') return value === '';
  return value instanceof Uint8Array && value.byteLength === 0;
}
