import type { ServerErrorCodeName } from '@pserver/proto';

/**
 * Error codes of the optimizer library: the proto `ErrorCode` names OPTIMIZER_* (mapped to gRPC
 * statuses by libs/rpc).
 */
export type OptimizerErrorCode = Extract<ServerErrorCodeName, `OPTIMIZER_${string}`>;

/** A typed error whose message names the field or thing and the value. */
export class OptimizerError extends Error {
  override readonly name = 'OptimizerError';

  constructor(
    readonly code: OptimizerErrorCode,
    message: string,
    /** The config field (`adam.beta1`) or the thing (`gradient`) at fault. */
    readonly field: string,
    readonly value: unknown,
  ) {
    super(message);
  }
}

export function invalidConfig(field: string, value: unknown, rule: string): OptimizerError {
  return new OptimizerError(
    'OPTIMIZER_INVALID_CONFIG',
    `optimizer config: ${field} ${rule}, got ${describe(value)}`,
    field,
    value,
  );
}

export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  if (value === undefined || value === null) return String(value);
  return JSON.stringify(value) ?? String(value);
}
