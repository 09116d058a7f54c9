// Original file: proto/pserver/v1/table.proto


/**
 * Row SGD.
 */
export interface RowSgd {
}

/**
 * Row SGD.
 */
export interface RowSgd__Output {
}
