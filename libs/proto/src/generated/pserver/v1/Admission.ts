// Original file: proto/pserver/v1/table.proto

import type { CountingAdmission as _pserver_v1_CountingAdmission, CountingAdmission__Output as _pserver_v1_CountingAdmission__Output } from '../../pserver/v1/CountingAdmission';
import type { ProbabilisticAdmission as _pserver_v1_ProbabilisticAdmission, ProbabilisticAdmission__Output as _pserver_v1_ProbabilisticAdmission__Output } from '../../pserver/v1/ProbabilisticAdmission';

/**
 * Which new ids get a row; a rejected id's gradient is dropped and counted.
 */
export interface Admission {
  /**
   * Admit an id once it has been pushed `min_count` times (occurrences summed over pushes).
   */
  'counting'?: (_pserver_v1_CountingAdmission | null);
  /**
   * Admit an id with probability p, deterministically: iff its hash, keyed by the table's seed,
   * is below p · 2^32 (the same ids in every process).
   */
  'probabilistic'?: (_pserver_v1_ProbabilisticAdmission | null);
  /**
   * The rule.
   */
  'rule'?: "counting"|"probabilistic";
}

/**
 * Which new ids get a row; a rejected id's gradient is dropped and counted.
 */
export interface Admission__Output {
  /**
   * Admit an id once it has been pushed `min_count` times (occurrences summed over pushes).
   */
  'counting'?: (_pserver_v1_CountingAdmission__Output | null);
  /**
   * Admit an id with probability p, deterministically: iff its hash, keyed by the table's seed,
   * is below p · 2^32 (the same ids in every process).
   */
  'probabilistic'?: (_pserver_v1_ProbabilisticAdmission__Output | null);
  /**
   * The rule.
   */
  'rule'?: "counting"|"probabilistic";
}
