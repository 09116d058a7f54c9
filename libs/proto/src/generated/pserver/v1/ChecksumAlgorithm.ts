// Original file: proto/pserver/v1/checkpoint.proto

/**
 * Checksum algorithms of checkpoint files.
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
  /**
   * SHA-256, 32 bytes.
   */
  CHECKSUM_ALGORITHM_SHA256: 'CHECKSUM_ALGORITHM_SHA256',
} as const;

/**
 * Checksum algorithms of checkpoint files.
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
   * SHA-256, 32 bytes.
   */
  | 'CHECKSUM_ALGORITHM_SHA256'
  | 2

/**
 * Checksum algorithms of checkpoint files.
 */
export type ChecksumAlgorithm__Output = typeof ChecksumAlgorithm[keyof typeof ChecksumAlgorithm]
