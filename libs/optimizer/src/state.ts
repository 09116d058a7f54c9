import { OptimizerError } from './errors';
import type { Vector } from './kernels/reference-kernels';

/**
 * An optimizer's state for one tensor, exact to the bit: the number of updates applied, the
 * per-element slots (copies, in the parameter's element type) and scalars such as Adam's running
 * products of β1 and β2. It maps one-to-one onto the proto `OptimizerState` (slots as raw
 * little-endian bytes, never decimal text).
 */
export interface OptimizerStateData {
  updates: number;
  slots: { name: string; values: Vector }[];
  scalars: Record<string, number>;
}

/** State to import: as exported, or with slots as raw little-endian bytes (at any alignment). */
export interface OptimizerStateInput {
  updates: number;
  slots: { name: string; values: Vector | Uint8Array }[];
  scalars: Record<string, number>;
}

/** The proto `OptimizerState` shape, with slots as raw little-endian bytes. */
export interface OptimizerStateMessage {
  updates: number;
  slots: { name: string; content: Uint8Array }[];
  scalars: Record<string, number>;
}

// Typed arrays use the platform's byte order; the wire and the checkpoints are little-endian.
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  throw new Error('@pserver/optimizer: big-endian platforms are not supported');
}

export function stateToMessage(state: OptimizerStateData): OptimizerStateMessage {
  return {
    updates: state.updates,
    slots: state.slots.map(({ name, values }) => ({
      name,
      content: new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
    })),
    scalars: { ...state.scalars },
  };
}

/** The state of a proto `OptimizerState`, its slots' bytes used as they are (no copy). */
export function stateFromMessage(message: OptimizerStateMessage): OptimizerStateInput {
  return {
    updates: message.updates,
    slots: message.slots.map(({ name, content }) => ({ name, values: content })),
    scalars: { ...message.scalars },
  };
}

export function invalidState(reason: string): OptimizerError {
  return new OptimizerError(
    'OPTIMIZER_INVALID_STATE',
    `optimizer state: ${reason}`,
    'state',
    reason,
  );
}
