// Original file: proto/pserver/v1/table.proto

import type { ConstantInit as _pserver_v1_ConstantInit, ConstantInit__Output as _pserver_v1_ConstantInit__Output } from '../../pserver/v1/ConstantInit';
import type { UniformInit as _pserver_v1_UniformInit, UniformInit__Output as _pserver_v1_UniformInit__Output } from '../../pserver/v1/UniformInit';
import type { NormalInit as _pserver_v1_NormalInit, NormalInit__Output as _pserver_v1_NormalInit__Output } from '../../pserver/v1/NormalInit';
import type { Long } from '@grpc/proto-loader';

/**
 * A row's starting value, the same bytes in every process and language: element e of the row of
 * id (lo, hi) under seed (seed_lo, seed_hi) draws the 32-bit value
 * u(k) = fmix32(fmix32(fmix32(fmix32(seed_lo ^ k) ^ seed_hi) ^ lo) ^ hi ^ imul(e, 0x9e3779b9))
 * for a counter k (k = 0 for uniform, k = 0..11 for normal) and maps it to (u >>> 8) · 2^-24.
 */
export interface RowInitializer {
  /**
   * Every element the same value.
   */
  'constant'?: (_pserver_v1_ConstantInit | null);
  /**
   * Uniform on [low, high): low + (high − low) · U, computed in binary64, stored as float32.
   */
  'uniform'?: (_pserver_v1_UniformInit | null);
  /**
   * Approximately normal: mean + stddev · (U0 + … + U11 − 6) (Irwin–Hall of 12, within ±6σ),
   * computed in binary64, stored as float32 — exact in every language, unlike a Box–Muller draw.
   */
  'normal'?: (_pserver_v1_NormalInit | null);
  /**
   * The generator's seed.
   */
  'seed'?: (number | string | Long);
  /**
   * The distribution. Unset: zeros.
   */
  'kind'?: "constant"|"uniform"|"normal";
}

/**
 * A row's starting value, the same bytes in every process and language: element e of the row of
 * id (lo, hi) under seed (seed_lo, seed_hi) draws the 32-bit value
 * u(k) = fmix32(fmix32(fmix32(fmix32(seed_lo ^ k) ^ seed_hi) ^ lo) ^ hi ^ imul(e, 0x9e3779b9))
 * for a counter k (k = 0 for uniform, k = 0..11 for normal) and maps it to (u >>> 8) · 2^-24.
 */
export interface RowInitializer__Output {
  /**
   * Every element the same value.
   */
  'constant'?: (_pserver_v1_ConstantInit__Output | null);
  /**
   * Uniform on [low, high): low + (high − low) · U, computed in binary64, stored as float32.
   */
  'uniform'?: (_pserver_v1_UniformInit__Output | null);
  /**
   * Approximately normal: mean + stddev · (U0 + … + U11 − 6) (Irwin–Hall of 12, within ±6σ),
   * computed in binary64, stored as float32 — exact in every language, unlike a Box–Muller draw.
   */
  'normal'?: (_pserver_v1_NormalInit__Output | null);
  /**
   * The generator's seed.
   */
  'seed': (number);
  /**
   * The distribution. Unset: zeros.
   */
  'kind'?: "constant"|"uniform"|"normal";
}
