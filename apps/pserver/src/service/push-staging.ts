import { PserverError } from '../shard/errors';
import type { Placement } from '../shard/staged-push';

export type { Placement };

/**
 * A push being received, as the data path sees it: where a gradient's bytes belong, so that they
 * are written there as they arrive (`placeFor`, undefined when they cannot be placed before the
 * push is checked: the receiver keeps them aside), and `discard` for a call that ends before its
 * push is sent. Given back with the push (`ParameterService.sendGrads`), it is the service's.
 */
export interface PushStaging {
  placeFor(name: string, offset: number, byteLength: number): Placement | undefined;
  discard(): void;
}

/** What a streamed push's service reads when its call ends before the client half-closed. */
export function streamCancelled(): PserverError {
  return new PserverError('CANCELLED', 'SendGradsStream: cancelled by the client or its deadline');
}
