import {
  isElementTypeName,
  parseBlockName,
  type OptimizerConfig__Output,
  type ParamSpec__Output,
} from '@pserver/proto';
import { ClientError } from './errors';
import type { TensorSpec } from './tensors';

/** A tensor of the model as the shards list it: what `listParams()` returns per name. */
export interface ListedParam extends TensorSpec {
  /** The resolved optimizer config (learning rate filled in); null for stored-only tensors. */
  optimizer: OptimizerConfig__Output | null;
}

/**
 * The model's tensors from every shard's ListParams entries (proto/README.md, "Attaching"): a
 * tensor stored whole is one entry under its name; a larger one is blocks `<t>@0 … <t>@k-1`,
 * spread over the shards, that must be contiguous from 0 and, but for the last, hold exactly
 * `blockSize` elements each. Its length is the sum of its blocks' elements; its element type,
 * shape and optimizer come from any entry (they are the whole tensor's on every block).
 */
export function assembleModel(
  entries: readonly ParamSpec__Output[],
  blockSize: number,
): Map<string, ListedParam> {
  const byTensor = new Map<string, { whole?: ParamSpec__Output; blocks: ParamSpec__Output[] }>();
  for (const entry of entries) {
    const { tensor, block } = parseBlockName(entry.name);
    const seen = byTensor.get(tensor) ?? { blocks: [] };
    byTensor.set(tensor, seen);
    if (block === undefined) {
      if (seen.whole) throw inconsistent(tensor, 'listed twice');
      seen.whole = entry;
    } else {
      if (Number.isNaN(block)) throw inconsistent(tensor, `a block name ${entry.name}`);
      seen.blocks[block] = entry;
    }
  }
  const model = new Map<string, ListedParam>();
  for (const [name, { whole, blocks }] of byTensor) {
    if (whole && blocks.length > 0) throw inconsistent(name, 'listed whole and as blocks');
    let parts: ParamSpec__Output[];
    if (whole) {
      parts = [whole];
    } else {
      parts = [];
      for (let k = 0; k < blocks.length; k++) {
        const block = blocks[k];
        if (!block) throw inconsistent(name, `block ${k} of ${blocks.length} is missing`);
        if (k < blocks.length - 1 && block.elements !== blockSize)
          throw inconsistent(
            name,
            `block ${k} holds ${block.elements} elements, the block size is ${blockSize}`,
          );
        parts.push(block);
      }
    }
    const first = parts[0]!;
    if (!isElementTypeName(first.elementType))
      throw inconsistent(name, `element type ${first.elementType}`);
    const length = parts.reduce((sum, part) => sum + part.elements, 0);
    const shape = [...first.shape];
    if (shape.length > 0 && shape.reduce((a, b) => a * b, 1) !== length)
      throw inconsistent(name, `shape [${shape.join(', ')}] but ${length} elements listed`);
    model.set(name, { elementType: first.elementType, length, shape, optimizer: first.optimizer });
  }
  return model;
}

function inconsistent(tensor: string, what: string): ClientError {
  return new ClientError(
    'CLIENT_UNKNOWN_TENSOR',
    `tensor ${tensor}: the shards' listing does not add up (${what})`,
  );
}
