export type { EmbeddingErrorCode } from './errors';
export { EmbeddingError } from './errors';
export { fmix32, indexHash } from './hash';
export type { IdIndexOptions } from './id-index';
export {
  capacityFor,
  defaultIdIndexOptions,
  IdIndex,
  maxIdIndexCapacity,
  maxLoad,
} from './id-index';
export type { RowArenaOptions, RowChunk } from './row-arena';
export { defaultRowArenaOptions, RowArena, rowFlags } from './row-arena';
export type { RowInit } from './row-init';
export { initDraw, writeInitRow } from './row-init';
export type {
  AdmissionRule,
  PendingAdmissions,
  PreparedSparsePush,
  SparseGradBytes,
  SparseOutcomeCounts,
  SparseTableOptions,
  TableRowsSection,
} from './sparse-table';
export { admissionHash, SparseTable } from './sparse-table';
