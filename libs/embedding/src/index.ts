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
