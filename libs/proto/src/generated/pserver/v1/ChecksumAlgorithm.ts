// Original file: proto/pserver/v1/checkpoint.proto

/**
 * Checksum algorithms of checkpoint files: every value here is one that writers write and
 * readers verify. The checksums guard against torn writes, flipped bits and truncation, not an
 * adversary (whoever can rewrite a file can rewrite its checksum), which CRC-32C does at the
 * disk's speed; libs/checkpoint/README.md has the measurements.
 */
export const ChecksumAlgorithm = {
  /**
   * Not set: invalid.
   */
  CHECKSUM_ALGORITHM_UNSPECIFIED: 'CHECKSUM_ALGORITHM_UNSPECIFIED',
  /**
   * CRC-32C (Castagnoli), 4 bytes, big-endian.
   */
  CHECKSUM_ALGORITHM_CRC32C: 'CHECKSUM_ALGORITHM_CRC32C',
} as const;

/**
 * Checksum algorithms of checkpoint files: every value here is one that writers write and
 * readers verify. The checksums guard against torn writes, flipped bits and truncation, not an
 * adversary (whoever can rewrite a file can rewrite its checksum), which CRC-32C does at the
 * disk's speed; libs/checkpoint/README.md has the measurements.
 */
export type ChecksumAlgorithm =
  /**
   * Not set: invalid.
   */
  | 'CHECKSUM_ALGORITHM_UNSPECIFIED'
  | 0
  /**
   * CRC-32C (Castagnoli), 4 bytes, big-endian.
   */
  | 'CHECKSUM_ALGORITHM_CRC32C'
  | 1

/**
 * Checksum algorithms of checkpoint files: every value here is one that writers write and
 * readers verify. The checksums guard against torn writes, flipped bits and truncation, not an
 * adversary (whoever can rewrite a file can rewrite its checksum), which CRC-32C does at the
 * disk's speed; libs/checkpoint/README.md has the measurements.
 */
export type ChecksumAlgorithm__Output = typeof ChecksumAlgorithm[keyof typeof ChecksumAlgorithm]
