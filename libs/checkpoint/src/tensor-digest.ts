import {
  elementSizes,
  enumType,
  isElementTypeName,
  type TensorRecord__Output,
} from '@pserver/proto';
import { canonicalMessage } from './canonical-message';
import { compareUtf8, DigestWriter } from './digest-writer';
import { CheckpointError } from './errors';

/** One dense record's part of a job digest. */
export interface TensorDigest {
  /** The tensor's or block's name (`w`, `w@3`). */
  name: string;
  /** SHA-256 of the record's canonical form. */
  digest: Buffer;
  elements: number;
}

/**
 * The digest of a tensor record (README.md, "Job digest"): everything the record holds, which is
 * all of the tensor's own state — name, element type, shape, content, the optimizer config, and
 * the optimizer state (its update count t, which bias correction and learning-rate schedules
 * read; every slot's raw bytes; the scalars, such as running products of β). Nothing of the
 * record is left out: the shard-specific facts (index, count, epoch, step marks) are in the
 * file's other frames, and a block's name and content depend only on the job's block size.
 */
export function tensorDigest(record: TensorRecord__Output, file: string): TensorDigest {
  const tensor = record.tensor;
  if (!tensor) throw corrupt(`checkpoint ${file}: a tensor record without its tensor`);
  const type = tensor.elementType;
  const size = isElementTypeName(type) ? elementSizes[type] : 0;
  const elements = tensor.content.byteLength / size;
  if (!Number.isInteger(elements))
    throw corrupt(
      `checkpoint ${file}: tensor ${tensor.name} has element type ${String(type)} and ${tensor.content.byteLength} bytes`,
    );
  const out = new DigestWriter();
  out.text(tensor.name);
  out.u32(enumNumber('ElementType', type));
  out.u64(tensor.shape.length);
  for (const dim of tensor.shape) out.u64(dim);
  out.bytes(tensor.content);
  out.u32(record.optimizer ? 1 : 0);
  if (record.optimizer) out.bytes(canonicalMessage('OptimizerConfig', record.optimizer));
  const state = record.state;
  out.u32(state ? 1 : 0);
  if (state) {
    out.u64(state.updates);
    const slots = [...state.slots].sort((a, b) => compareUtf8(a.name, b.name));
    checkUnique(
      slots.map((s) => s.name),
      `checkpoint ${file}: tensor ${tensor.name}: optimizer slot`,
    );
    out.u64(slots.length);
    for (const slot of slots) {
      out.text(slot.name);
      out.bytes(slot.content);
    }
    const scalars = Object.keys(state.scalars).sort(compareUtf8);
    out.u64(scalars.length);
    for (const name of scalars) {
      out.text(name);
      out.f64(state.scalars[name]!);
    }
  }
  return { name: tensor.name, digest: out.digest(), elements };
}

/** An enum value as its number, whether the decoder gave its name or (unknown to it) the number. */
export function enumNumber(enumName: string, value: string | number): number {
  if (typeof value === 'number') return value;
  const number = enumType(enumName).values[value];
  if (number === undefined)
    throw new CheckpointError('CHECKPOINT_CORRUPT', `${value} is not a value of ${enumName}`);
  return number;
}

/** Throws when sorted `names` hold one twice. */
export function checkUnique(names: readonly string[], what: string): void {
  for (let k = 1; k < names.length; k++)
    if (names[k] === names[k - 1]) throw corrupt(`${what} ${names[k]} appears twice`);
}

function corrupt(message: string): CheckpointError {
  return new CheckpointError('CHECKPOINT_CORRUPT', message);
}
