// Original file: proto/pserver/v1/errors.proto

/**
 * Every error a pserver, a master or a client raises, by its stable code. A failed call carries
 * the code's name (e.g. `PSERVER_STALE_EPOCH`) in the trailer `pserver-error-code`, next to the
 * gRPC status listed with each value; clients branch on the code, never on message text. Codes
 * named CLIENT_* are raised by the clients themselves and never travel. Values are grouped by
 * status, in ranges of 100, so a group can grow; a number is never reused. Each code's status and
 * what a client does on it (retry, re-run the step, wait for the shard, fail, …) are the rules
 * of proto/testdata/error_codes.json, which every client follows.
 */
export const ErrorCode = {
  /**
   * No code: an error without a `pserver-error-code` trailer (a status from gRPC itself, a proxy,
   * or a server older than the code).
   */
  ERROR_CODE_UNSPECIFIED: 'ERROR_CODE_UNSPECIFIED',
  /**
   * INVALID_ARGUMENT: bad input, the request cannot succeed as sent. Nothing changed.
   * 
   * A field out of range or missing (the message names the field and the value).
   */
  PSERVER_INVALID_ARGUMENT: 'PSERVER_INVALID_ARGUMENT',
  /**
   * A tensor name that is empty, too long, not UTF-8, or has `@` where it may not.
   */
  PSERVER_INVALID_NAME: 'PSERVER_INVALID_NAME',
  /**
   * An element type that is UNSPECIFIED or not an ElementType value.
   */
  PSERVER_INVALID_ELEMENT_TYPE: 'PSERVER_INVALID_ELEMENT_TYPE',
  /**
   * A gradient's element type differs from its tensor's.
   */
  PSERVER_ELEMENT_TYPE_MISMATCH: 'PSERVER_ELEMENT_TYPE_MISMATCH',
  /**
   * A content length that is not a multiple of the element size, a shape whose elements do not
   * match the content, or a gradient whose byte length differs from its parameter's.
   */
  PSERVER_LENGTH_MISMATCH: 'PSERVER_LENGTH_MISMATCH',
  /**
   * A name given twice in one request.
   */
  PSERVER_DUPLICATE_NAME: 'PSERVER_DUPLICATE_NAME',
  /**
   * An optimizer config for a tensor that is stored, not optimized (integer and 16-bit element
   * types), or a gradient for one.
   */
  PSERVER_NOT_OPTIMIZABLE: 'PSERVER_NOT_OPTIMIZABLE',
  /**
   * A gradient with NaN or ±Infinity under NON_FINITE_POLICY_REJECT.
   */
  PSERVER_NON_FINITE_GRADIENT: 'PSERVER_NON_FINITE_GRADIENT',
  /**
   * A RequestContext the call cannot use: trainer_id 0 or step 0 on a push, a trainer_id or step
   * above 2^53 − 1.
   */
  PSERVER_INVALID_CONTEXT: 'PSERVER_INVALID_CONTEXT',
  /**
   * A shard epoch above any the shard has had.
   */
  PSERVER_BOGUS_EPOCH: 'PSERVER_BOGUS_EPOCH',
  /**
   * A tensor or block that the placement rule puts on another shard.
   */
  PSERVER_WRONG_SHARD: 'PSERVER_WRONG_SHARD',
  /**
   * A streamed push whose chunks are out of order, overlap, leave gaps or overrun a gradient.
   */
  PSERVER_INVALID_STREAM: 'PSERVER_INVALID_STREAM',
  /**
   * A gradient whose non-empty shape differs from its tensor's whole shape (a tensor stored
   * without a shape, a flat vector, also accepts a 1-D shape: its element count, or for a block
   * any length that holds the block). The message names the tensor, the expected and the actual
   * shape. A wrong element count is PSERVER_LENGTH_MISMATCH.
   */
  PSERVER_SHAPE_MISMATCH: 'PSERVER_SHAPE_MISMATCH',
  /**
   * A reply that would exceed the server's message limit (GetParams of too many bytes at once):
   * ask for fewer tensors per call. The message names the size and the limit.
   */
  PSERVER_REPLY_TOO_LARGE: 'PSERVER_REPLY_TOO_LARGE',
  /**
   * An optimizer config out of range, naming two rules, or plain SGD without
   * `learning_rate.base` (the message names the field).
   */
  OPTIMIZER_INVALID_CONFIG: 'OPTIMIZER_INVALID_CONFIG',
  /**
   * An element type the update rule cannot optimize (the pserver stores such tensors instead,
   * so it does not send this code).
   */
  OPTIMIZER_UNSUPPORTED_ELEMENT_TYPE: 'OPTIMIZER_UNSUPPORTED_ELEMENT_TYPE',
  /**
   * A gradient with NaN or ±Infinity, found by the update rule (the pserver answers
   * PSERVER_NON_FINITE_GRADIENT for it).
   */
  OPTIMIZER_NON_FINITE_GRADIENT: 'OPTIMIZER_NON_FINITE_GRADIENT',
  /**
   * A gradient or state whose length differs from the parameter's.
   */
  OPTIMIZER_LENGTH_MISMATCH: 'OPTIMIZER_LENGTH_MISMATCH',
  /**
   * Optimizer state from a checkpoint that does not fit the rule (recovery then treats that
   * checkpoint as broken and tries the previous one).
   */
  OPTIMIZER_INVALID_STATE: 'OPTIMIZER_INVALID_STATE',
  /**
   * A master request field out of range or missing.
   */
  MASTER_INVALID_ARGUMENT: 'MASTER_INVALID_ARGUMENT',
  /**
   * A dataset description the master cannot split into tasks.
   */
  MASTER_INVALID_DATASET: 'MASTER_INVALID_DATASET',
  /**
   * A request that is not a valid protobuf message of its type.
   */
  RPC_UNPARSABLE_MESSAGE: 'RPC_UNPARSABLE_MESSAGE',
  /**
   * NOT_FOUND: an unknown thing.
   * 
   * A tensor or block the shard does not hold.
   */
  PSERVER_UNKNOWN_TENSOR: 'PSERVER_UNKNOWN_TENSOR',
  /**
   * The trainer's session has expired (KeepAlive, GetTask, …): register again.
   */
  MASTER_SESSION_EXPIRED: 'MASTER_SESSION_EXPIRED',
  /**
   * A task id the master does not know, or one that is no longer the trainer's.
   */
  MASTER_UNKNOWN_TASK: 'MASTER_UNKNOWN_TASK',
  /**
   * FAILED_PRECONDITION: the right request in the wrong lifecycle state.
   * 
   * InitParam or FinishInitParams after initialization; an initializing client treats it as
   * success.
   */
  PSERVER_ALREADY_INITIALIZED: 'PSERVER_ALREADY_INITIALIZED',
  /**
   * A push before initialization.
   */
  PSERVER_NOT_INITIALIZED: 'PSERVER_NOT_INITIALIZED',
  /**
   * Another live process holds this member name.
   */
  PSERVER_MEMBER_TAKEN: 'PSERVER_MEMBER_TAKEN',
  /**
   * A replication call this pserver cannot take: it does not replicate (or, for FetchSnapshot,
   * serve) the shard under the caller's primary epoch. Nothing changed.
   */
  PSERVER_NOT_REPLICA: 'PSERVER_NOT_REPLICA',
  /**
   * SYNC or BOUNDED_STALENESS: a push or read by a trainer that is not in the shard's roster.
   */
  PSERVER_NOT_IN_ROSTER: 'PSERVER_NOT_IN_ROSTER',
  /**
   * SYNC, after a failover: a read or push of step k + 1 by a trainer whose contribution to
   * step k the shard does not hold, while step k is still open there (it was on the failed
   * primary alone, or after the shard's last checkpoint). The trainer sends its push of step k
   * to the shard again, under the same identity, and retries the call; a trainer that took no
   * part in step k sends a zero-sample push for it. Nothing changed but the trainer's mark.
   */
  PSERVER_RESEND_STEP: 'PSERVER_RESEND_STEP',
  /**
   * Drain on a standalone pserver: no master would give its shard to another (stop it with
   * SIGTERM, which commits a final checkpoint, and start it again).
   */
  PSERVER_CANNOT_DRAIN: 'PSERVER_CANNOT_DRAIN',
  /**
   * SetDataset with a different dataset than the job's.
   */
  MASTER_DATASET_ALREADY_SET: 'MASTER_DATASET_ALREADY_SET',
  /**
   * SetDesiredShards while it would orphan a shard that holds parameters, or, once the job is
   * initialized, while any pserver still holds a shard or a replica (stop them first).
   */
  MASTER_SHARDS_IN_USE: 'MASTER_SHARDS_IN_USE',
  /**
   * FinishInit from a trainer that was not elected to initialize.
   */
  MASTER_NOT_INIT_OWNER: 'MASTER_NOT_INIT_OWNER',
  /**
   * A change to the job's placement it cannot take: one after the placement was fixed, or a
   * shard count a job this large cannot move to (the record of its checkpoints would pass
   * etcd's value limit).
   */
  MASTER_PLACEMENT_FIXED: 'MASTER_PLACEMENT_FIXED',
  /**
   * RegisterTrainer once the job is finished (FinishJob): it takes no more training.
   */
  MASTER_JOB_FINISHED: 'MASTER_JOB_FINISHED',
  /**
   * SetDesiredShards while an earlier change of the initialized job's shard count is pending:
   * not every index of the new count has restored its share of the old checkpoints yet. The
   * message names those indices; start the job's pservers and let them restore first.
   */
  MASTER_RESHAPE_PENDING: 'MASTER_RESHAPE_PENDING',
  /**
   * A checkpoint or manifest written for another shard (index or shard count): loading it would
   * misplace tensors. The pserver refuses to recover from it.
   */
  CHECKPOINT_INCOMPATIBLE: 'CHECKPOINT_INCOMPATIBLE',
  /**
   * ABORTED: the caller's view is stale; refresh it and redo the work (trailer
   * `pserver-shard-epoch`).
   * 
   * The request's shard epoch is below the shard's.
   */
  PSERVER_STALE_EPOCH: 'PSERVER_STALE_EPOCH',
  /**
   * UNAVAILABLE: try elsewhere or later.
   * 
   * The pserver is shutting down.
   */
  PSERVER_SHUTTING_DOWN: 'PSERVER_SHUTTING_DOWN',
  /**
   * The pserver lost its lease on the shard; a successor takes it over.
   */
  PSERVER_FENCED: 'PSERVER_FENCED',
  /**
   * The pserver holds the shard but has not finished recovering it.
   */
  PSERVER_NOT_SERVING: 'PSERVER_NOT_SERVING',
  /**
   * This master replica is not the leader (trailer `pserver-leader` when it knows who is).
   */
  MASTER_NOT_LEADER: 'MASTER_NOT_LEADER',
  /**
   * Reading or writing a checkpoint failed for a reason that may pass (an I/O error other than
   * a full disk): FinishInitParams or SaveCheckpoint may be retried.
   */
  CHECKPOINT_IO: 'CHECKPOINT_IO',
  /**
   * RESOURCE_EXHAUSTED: out of a resource; back off and retry (trailer `pserver-retry-after-ms`).
   * 
   * Too many push bytes in flight on the shard.
   */
  PSERVER_OVERLOADED: 'PSERVER_OVERLOADED',
  /**
   * The checkpoint volume is full.
   */
  CHECKPOINT_NO_SPACE: 'CHECKPOINT_NO_SPACE',
  /**
   * A table's part on the shard cannot hold the push's new rows (its index or memory cannot
   * grow). Nothing was applied. Not transient: clients do not retry it; bound the table
   * (`eviction.max_rows`, `eviction.ttl_steps`) or give the job more shards.
   */
  PSERVER_TABLE_FULL: 'PSERVER_TABLE_FULL',
  /**
   * DATA_LOSS: stored data that cannot be read back.
   * 
   * A checkpoint file or manifest that cannot be read back: a wrong size, checksum, frame or
   * meta, or a format version this reader does not know.
   */
  CHECKPOINT_CORRUPT: 'CHECKPOINT_CORRUPT',
  /**
   * UNAUTHENTICATED and PERMISSION_DENIED: who is calling (SECURITY.md). Nothing ran.
   * 
   * No verified client certificate and no valid bearer token.
   */
  AUTH_UNAUTHENTICATED: 'AUTH_UNAUTHENTICATED',
  /**
   * The caller's role may not call the method.
   */
  AUTH_PERMISSION_DENIED: 'AUTH_PERMISSION_DENIED',
  /**
   * DEADLINE_EXCEEDED and CANCELLED: waiting ended.
   * 
   * The call's deadline passed.
   */
  DEADLINE_EXCEEDED: 'DEADLINE_EXCEEDED',
  /**
   * The caller cancelled the call.
   */
  CANCELLED: 'CANCELLED',
  /**
   * Raised by clients, never sent.
   * 
   * A step did not complete before its deadline (the last error is its cause).
   */
  CLIENT_STEP_FAILED: 'CLIENT_STEP_FAILED',
  /**
   * The view changed under a step's context: the step runs again.
   */
  CLIENT_STALE_VIEW: 'CLIENT_STALE_VIEW',
  /**
   * A tensor the client does not know (neither initialized nor listed from the cluster).
   */
  CLIENT_UNKNOWN_TENSOR: 'CLIENT_UNKNOWN_TENSOR',
  /**
   * Neither master nor pserver addresses were given.
   */
  CLIENT_NO_MASTER: 'CLIENT_NO_MASTER',
  /**
   * The client was closed.
   */
  CLIENT_CLOSED: 'CLIENT_CLOSED',
  /**
   * A wait (for a view, a master, the init election) passed its deadline.
   */
  CLIENT_DEADLINE_EXCEEDED: 'CLIENT_DEADLINE_EXCEEDED',
  /**
   * TLS and token settings that do not fit together (e.g. a token without TLS to a remote host).
   */
  CLIENT_INVALID_SECURITY: 'CLIENT_INVALID_SECURITY',
  /**
   * A task that is not a file-lines task was read as one.
   */
  CLIENT_NOT_A_FILE_TASK: 'CLIENT_NOT_A_FILE_TASK',
  /**
   * A message over gRPC's size limit on either side that the client cannot split (one block
   * larger than the limit): raise the limit or lower the block size. Not retried.
   */
  CLIENT_MESSAGE_TOO_LARGE: 'CLIENT_MESSAGE_TOO_LARGE',
  /**
   * A tensor given to a call with a shape or element type other than the model's.
   */
  CLIENT_SHAPE_MISMATCH: 'CLIENT_SHAPE_MISMATCH',
  /**
   * Connect options that cannot work: a trainer id that is not a whole number ≥ 1, pservers that
   * run different consistency modes.
   */
  CLIENT_INVALID_OPTIONS: 'CLIENT_INVALID_OPTIONS',
} as const;

/**
 * Every error a pserver, a master or a client raises, by its stable code. A failed call carries
 * the code's name (e.g. `PSERVER_STALE_EPOCH`) in the trailer `pserver-error-code`, next to the
 * gRPC status listed with each value; clients branch on the code, never on message text. Codes
 * named CLIENT_* are raised by the clients themselves and never travel. Values are grouped by
 * status, in ranges of 100, so a group can grow; a number is never reused. Each code's status and
 * what a client does on it (retry, re-run the step, wait for the shard, fail, …) are the rules
 * of proto/testdata/error_codes.json, which every client follows.
 */
export type ErrorCode =
  /**
   * No code: an error without a `pserver-error-code` trailer (a status from gRPC itself, a proxy,
   * or a server older than the code).
   */
  | 'ERROR_CODE_UNSPECIFIED'
  | 0
  /**
   * INVALID_ARGUMENT: bad input, the request cannot succeed as sent. Nothing changed.
   * 
   * A field out of range or missing (the message names the field and the value).
   */
  | 'PSERVER_INVALID_ARGUMENT'
  | 100
  /**
   * A tensor name that is empty, too long, not UTF-8, or has `@` where it may not.
   */
  | 'PSERVER_INVALID_NAME'
  | 101
  /**
   * An element type that is UNSPECIFIED or not an ElementType value.
   */
  | 'PSERVER_INVALID_ELEMENT_TYPE'
  | 102
  /**
   * A gradient's element type differs from its tensor's.
   */
  | 'PSERVER_ELEMENT_TYPE_MISMATCH'
  | 103
  /**
   * A content length that is not a multiple of the element size, a shape whose elements do not
   * match the content, or a gradient whose byte length differs from its parameter's.
   */
  | 'PSERVER_LENGTH_MISMATCH'
  | 104
  /**
   * A name given twice in one request.
   */
  | 'PSERVER_DUPLICATE_NAME'
  | 105
  /**
   * An optimizer config for a tensor that is stored, not optimized (integer and 16-bit element
   * types), or a gradient for one.
   */
  | 'PSERVER_NOT_OPTIMIZABLE'
  | 106
  /**
   * A gradient with NaN or ±Infinity under NON_FINITE_POLICY_REJECT.
   */
  | 'PSERVER_NON_FINITE_GRADIENT'
  | 107
  /**
   * A RequestContext the call cannot use: trainer_id 0 or step 0 on a push, a trainer_id or step
   * above 2^53 − 1.
   */
  | 'PSERVER_INVALID_CONTEXT'
  | 108
  /**
   * A shard epoch above any the shard has had.
   */
  | 'PSERVER_BOGUS_EPOCH'
  | 109
  /**
   * A tensor or block that the placement rule puts on another shard.
   */
  | 'PSERVER_WRONG_SHARD'
  | 110
  /**
   * A streamed push whose chunks are out of order, overlap, leave gaps or overrun a gradient.
   */
  | 'PSERVER_INVALID_STREAM'
  | 111
  /**
   * A gradient whose non-empty shape differs from its tensor's whole shape (a tensor stored
   * without a shape, a flat vector, also accepts a 1-D shape: its element count, or for a block
   * any length that holds the block). The message names the tensor, the expected and the actual
   * shape. A wrong element count is PSERVER_LENGTH_MISMATCH.
   */
  | 'PSERVER_SHAPE_MISMATCH'
  | 112
  /**
   * A reply that would exceed the server's message limit (GetParams of too many bytes at once):
   * ask for fewer tensors per call. The message names the size and the limit.
   */
  | 'PSERVER_REPLY_TOO_LARGE'
  | 113
  /**
   * An optimizer config out of range, naming two rules, or plain SGD without
   * `learning_rate.base` (the message names the field).
   */
  | 'OPTIMIZER_INVALID_CONFIG'
  | 120
  /**
   * An element type the update rule cannot optimize (the pserver stores such tensors instead,
   * so it does not send this code).
   */
  | 'OPTIMIZER_UNSUPPORTED_ELEMENT_TYPE'
  | 121
  /**
   * A gradient with NaN or ±Infinity, found by the update rule (the pserver answers
   * PSERVER_NON_FINITE_GRADIENT for it).
   */
  | 'OPTIMIZER_NON_FINITE_GRADIENT'
  | 122
  /**
   * A gradient or state whose length differs from the parameter's.
   */
  | 'OPTIMIZER_LENGTH_MISMATCH'
  | 123
  /**
   * Optimizer state from a checkpoint that does not fit the rule (recovery then treats that
   * checkpoint as broken and tries the previous one).
   */
  | 'OPTIMIZER_INVALID_STATE'
  | 124
  /**
   * A master request field out of range or missing.
   */
  | 'MASTER_INVALID_ARGUMENT'
  | 140
  /**
   * A dataset description the master cannot split into tasks.
   */
  | 'MASTER_INVALID_DATASET'
  | 141
  /**
   * A request that is not a valid protobuf message of its type.
   */
  | 'RPC_UNPARSABLE_MESSAGE'
  | 160
  /**
   * NOT_FOUND: an unknown thing.
   * 
   * A tensor or block the shard does not hold.
   */
  | 'PSERVER_UNKNOWN_TENSOR'
  | 200
  /**
   * The trainer's session has expired (KeepAlive, GetTask, …): register again.
   */
  | 'MASTER_SESSION_EXPIRED'
  | 201
  /**
   * A task id the master does not know, or one that is no longer the trainer's.
   */
  | 'MASTER_UNKNOWN_TASK'
  | 202
  /**
   * FAILED_PRECONDITION: the right request in the wrong lifecycle state.
   * 
   * InitParam or FinishInitParams after initialization; an initializing client treats it as
   * success.
   */
  | 'PSERVER_ALREADY_INITIALIZED'
  | 300
  /**
   * A push before initialization.
   */
  | 'PSERVER_NOT_INITIALIZED'
  | 301
  /**
   * Another live process holds this member name.
   */
  | 'PSERVER_MEMBER_TAKEN'
  | 302
  /**
   * A replication call this pserver cannot take: it does not replicate (or, for FetchSnapshot,
   * serve) the shard under the caller's primary epoch. Nothing changed.
   */
  | 'PSERVER_NOT_REPLICA'
  | 303
  /**
   * SYNC or BOUNDED_STALENESS: a push or read by a trainer that is not in the shard's roster.
   */
  | 'PSERVER_NOT_IN_ROSTER'
  | 305
  /**
   * SYNC, after a failover: a read or push of step k + 1 by a trainer whose contribution to
   * step k the shard does not hold, while step k is still open there (it was on the failed
   * primary alone, or after the shard's last checkpoint). The trainer sends its push of step k
   * to the shard again, under the same identity, and retries the call; a trainer that took no
   * part in step k sends a zero-sample push for it. Nothing changed but the trainer's mark.
   */
  | 'PSERVER_RESEND_STEP'
  | 307
  /**
   * Drain on a standalone pserver: no master would give its shard to another (stop it with
   * SIGTERM, which commits a final checkpoint, and start it again).
   */
  | 'PSERVER_CANNOT_DRAIN'
  | 308
  /**
   * SetDataset with a different dataset than the job's.
   */
  | 'MASTER_DATASET_ALREADY_SET'
  | 310
  /**
   * SetDesiredShards while it would orphan a shard that holds parameters, or, once the job is
   * initialized, while any pserver still holds a shard or a replica (stop them first).
   */
  | 'MASTER_SHARDS_IN_USE'
  | 311
  /**
   * FinishInit from a trainer that was not elected to initialize.
   */
  | 'MASTER_NOT_INIT_OWNER'
  | 312
  /**
   * A change to the job's placement it cannot take: one after the placement was fixed, or a
   * shard count a job this large cannot move to (the record of its checkpoints would pass
   * etcd's value limit).
   */
  | 'MASTER_PLACEMENT_FIXED'
  | 313
  /**
   * RegisterTrainer once the job is finished (FinishJob): it takes no more training.
   */
  | 'MASTER_JOB_FINISHED'
  | 314
  /**
   * SetDesiredShards while an earlier change of the initialized job's shard count is pending:
   * not every index of the new count has restored its share of the old checkpoints yet. The
   * message names those indices; start the job's pservers and let them restore first.
   */
  | 'MASTER_RESHAPE_PENDING'
  | 315
  /**
   * A checkpoint or manifest written for another shard (index or shard count): loading it would
   * misplace tensors. The pserver refuses to recover from it.
   */
  | 'CHECKPOINT_INCOMPATIBLE'
  | 320
  /**
   * ABORTED: the caller's view is stale; refresh it and redo the work (trailer
   * `pserver-shard-epoch`).
   * 
   * The request's shard epoch is below the shard's.
   */
  | 'PSERVER_STALE_EPOCH'
  | 400
  /**
   * UNAVAILABLE: try elsewhere or later.
   * 
   * The pserver is shutting down.
   */
  | 'PSERVER_SHUTTING_DOWN'
  | 500
  /**
   * The pserver lost its lease on the shard; a successor takes it over.
   */
  | 'PSERVER_FENCED'
  | 501
  /**
   * The pserver holds the shard but has not finished recovering it.
   */
  | 'PSERVER_NOT_SERVING'
  | 502
  /**
   * This master replica is not the leader (trailer `pserver-leader` when it knows who is).
   */
  | 'MASTER_NOT_LEADER'
  | 503
  /**
   * Reading or writing a checkpoint failed for a reason that may pass (an I/O error other than
   * a full disk): FinishInitParams or SaveCheckpoint may be retried.
   */
  | 'CHECKPOINT_IO'
  | 504
  /**
   * RESOURCE_EXHAUSTED: out of a resource; back off and retry (trailer `pserver-retry-after-ms`).
   * 
   * Too many push bytes in flight on the shard.
   */
  | 'PSERVER_OVERLOADED'
  | 600
  /**
   * The checkpoint volume is full.
   */
  | 'CHECKPOINT_NO_SPACE'
  | 601
  /**
   * A table's part on the shard cannot hold the push's new rows (its index or memory cannot
   * grow). Nothing was applied. Not transient: clients do not retry it; bound the table
   * (`eviction.max_rows`, `eviction.ttl_steps`) or give the job more shards.
   */
  | 'PSERVER_TABLE_FULL'
  | 602
  /**
   * DATA_LOSS: stored data that cannot be read back.
   * 
   * A checkpoint file or manifest that cannot be read back: a wrong size, checksum, frame or
   * meta, or a format version this reader does not know.
   */
  | 'CHECKPOINT_CORRUPT'
  | 700
  /**
   * UNAUTHENTICATED and PERMISSION_DENIED: who is calling (SECURITY.md). Nothing ran.
   * 
   * No verified client certificate and no valid bearer token.
   */
  | 'AUTH_UNAUTHENTICATED'
  | 800
  /**
   * The caller's role may not call the method.
   */
  | 'AUTH_PERMISSION_DENIED'
  | 801
  /**
   * DEADLINE_EXCEEDED and CANCELLED: waiting ended.
   * 
   * The call's deadline passed.
   */
  | 'DEADLINE_EXCEEDED'
  | 900
  /**
   * The caller cancelled the call.
   */
  | 'CANCELLED'
  | 901
  /**
   * Raised by clients, never sent.
   * 
   * A step did not complete before its deadline (the last error is its cause).
   */
  | 'CLIENT_STEP_FAILED'
  | 1000
  /**
   * The view changed under a step's context: the step runs again.
   */
  | 'CLIENT_STALE_VIEW'
  | 1001
  /**
   * A tensor the client does not know (neither initialized nor listed from the cluster).
   */
  | 'CLIENT_UNKNOWN_TENSOR'
  | 1002
  /**
   * Neither master nor pserver addresses were given.
   */
  | 'CLIENT_NO_MASTER'
  | 1003
  /**
   * The client was closed.
   */
  | 'CLIENT_CLOSED'
  | 1004
  /**
   * A wait (for a view, a master, the init election) passed its deadline.
   */
  | 'CLIENT_DEADLINE_EXCEEDED'
  | 1005
  /**
   * TLS and token settings that do not fit together (e.g. a token without TLS to a remote host).
   */
  | 'CLIENT_INVALID_SECURITY'
  | 1006
  /**
   * A task that is not a file-lines task was read as one.
   */
  | 'CLIENT_NOT_A_FILE_TASK'
  | 1007
  /**
   * A message over gRPC's size limit on either side that the client cannot split (one block
   * larger than the limit): raise the limit or lower the block size. Not retried.
   */
  | 'CLIENT_MESSAGE_TOO_LARGE'
  | 1008
  /**
   * A tensor given to a call with a shape or element type other than the model's.
   */
  | 'CLIENT_SHAPE_MISMATCH'
  | 1009
  /**
   * Connect options that cannot work: a trainer id that is not a whole number ≥ 1, pservers that
   * run different consistency modes.
   */
  | 'CLIENT_INVALID_OPTIONS'
  | 1010

/**
 * Every error a pserver, a master or a client raises, by its stable code. A failed call carries
 * the code's name (e.g. `PSERVER_STALE_EPOCH`) in the trailer `pserver-error-code`, next to the
 * gRPC status listed with each value; clients branch on the code, never on message text. Codes
 * named CLIENT_* are raised by the clients themselves and never travel. Values are grouped by
 * status, in ranges of 100, so a group can grow; a number is never reused. Each code's status and
 * what a client does on it (retry, re-run the step, wait for the shard, fail, …) are the rules
 * of proto/testdata/error_codes.json, which every client follows.
 */
export type ErrorCode__Output = typeof ErrorCode[keyof typeof ErrorCode]
