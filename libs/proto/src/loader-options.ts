/**
 * How messages look in TypeScript, for gRPC calls (proto-loader) and for messages read and
 * written outside gRPC (protobufjs `toObject`) alike, matching the generated types:
 * camelCase fields, enums as their names, 64-bit integers as numbers (exact below 2^53; writers
 * may pass a decimal string for larger values), absent scalars as their defaults, and a virtual
 * field naming the member set in each oneof (`optional` fields are one-member oneofs `_<name>`).
 */
export const loaderOptions = {
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
} as const;
