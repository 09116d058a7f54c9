// Original file: proto/pserver/v1/master.proto

import type { FileRange as _pserver_v1_FileRange, FileRange__Output as _pserver_v1_FileRange__Output } from '../../pserver/v1/FileRange';
import type { RecordRange as _pserver_v1_RecordRange, RecordRange__Output as _pserver_v1_RecordRange__Output } from '../../pserver/v1/RecordRange';
import type { Long } from '@grpc/proto-loader';

/**
 * One hand-out of a piece of the dataset.
 */
export interface Task {
  /**
   * The task's id, stable across passes.
   */
  'id'?: (number | string | Long);
  /**
   * The dispatch number: rises on every hand-out. Reports carry it; stale ones are ignored.
   */
  'dispatch'?: (number | string | Long);
  /**
   * The pass.
   */
  'pass'?: (number | string | Long);
  /**
   * A byte range of a line-oriented file.
   */
  'file'?: (_pserver_v1_FileRange | null);
  /**
   * A range of generated records.
   */
  'records'?: (_pserver_v1_RecordRange | null);
  /**
   * Time left before the task is handed to another trainer.
   */
  'timeoutMs'?: (number | string | Long);
  /**
   * The data.
   */
  'range'?: "file"|"records";
}

/**
 * One hand-out of a piece of the dataset.
 */
export interface Task__Output {
  /**
   * The task's id, stable across passes.
   */
  'id': (number);
  /**
   * The dispatch number: rises on every hand-out. Reports carry it; stale ones are ignored.
   */
  'dispatch': (number);
  /**
   * The pass.
   */
  'pass': (number);
  /**
   * A byte range of a line-oriented file.
   */
  'file'?: (_pserver_v1_FileRange__Output | null);
  /**
   * A range of generated records.
   */
  'records'?: (_pserver_v1_RecordRange__Output | null);
  /**
   * Time left before the task is handed to another trainer.
   */
  'timeoutMs': (number);
  /**
   * The data.
   */
  'range'?: "file"|"records";
}
