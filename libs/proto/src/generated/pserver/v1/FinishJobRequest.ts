// Original file: proto/pserver/v1/master.proto

import type { RequestContext as _pserver_v1_RequestContext, RequestContext__Output as _pserver_v1_RequestContext__Output } from '../../pserver/v1/RequestContext';

/**
 * Asks for the job to finish.
 */
export interface FinishJobRequest {
  /**
   * The asking trainer's context (its trainer_id names it); an operator's call has none.
   */
  'context'?: (_pserver_v1_RequestContext | null);
  /**
   * How many trainers must have asked, this one included, before the job finishes; 0 or 1: at
   * once.
   */
  'trainers'?: (number);
}

/**
 * Asks for the job to finish.
 */
export interface FinishJobRequest__Output {
  /**
   * The asking trainer's context (its trainer_id names it); an operator's call has none.
   */
  'context': (_pserver_v1_RequestContext__Output | null);
  /**
   * How many trainers must have asked, this one included, before the job finishes; 0 or 1: at
   * once.
   */
  'trainers': (number);
}
