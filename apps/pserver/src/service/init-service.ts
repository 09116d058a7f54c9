import type { CheckpointMeta } from '@pserver/checkpoint';
import { OptimizerError } from '@pserver/optimizer';
import type {
  FinishInitParamsRequest__Output,
  FinishInitParamsResponse,
  InitParamRequest__Output,
  InitParamResponse,
  InitTableRequest__Output,
  InitTableResponse,
} from '@pserver/proto';
import { PserverError } from '../shard/errors';
import type { Shard } from '../shard/shard';
import { StoredTensor } from '../shard/stored-tensor';
import { checkTableSpec, createShardTable, tableError } from '../shard/table-spec';
import { elementCount, elementTypeOf } from '../shard/tensor-bytes';
import { beyondSafeInteger } from './request-checks';
import type { ShardAccess } from './shard-access';

/** What the service needs of the checkpointer (a fake in unit tests). */
export interface CheckpointSaver {
  readonly lastCommitted: CheckpointMeta | undefined;
  save(reason: string): Promise<CheckpointMeta>;
}

/**
 * InitParam, InitTable and FinishInitParams: what the shard holds before training, and the
 * moment it is initialized. Bad input is refused as such in every lifecycle state, so a
 * misconfigured trainer learns it also after another one initialized the shard; after
 * initialization the calls answer PSERVER_ALREADY_INITIALIZED.
 */
export class InitService {
  /** FinishInitParams while its checkpoint is being committed. */
  private finishing: Promise<FinishInitParamsResponse> | undefined;

  constructor(
    private readonly shard: Shard,
    private readonly access: ShardAccess,
    private readonly checkpointer: CheckpointSaver,
  ) {}

  async initParam(request: InitParamRequest__Output): Promise<InitParamResponse> {
    this.access.refuseIfStopping();
    await this.access.checkEpoch(request.context);
    const param = request.param;
    if (!param) throw new PserverError('PSERVER_INVALID_ARGUMENT', 'param: required');
    const name = this.access.checkName(param.name, 'param.name');
    const base = name.split('@')[0]!;
    if (this.shard.tables.has(base))
      throw new PserverError('PSERVER_DUPLICATE_NAME', `param.name: ${name}: ${base} is a table`);
    const elementType = elementTypeOf(param.elementType, `param ${name}: elementType`);
    const elements = elementCount(param.content.byteLength, elementType, `param ${name}: content`);
    const shape = param.shape;
    const inexact = shape.find((d) => !Number.isSafeInteger(d));
    if (inexact !== undefined) throw beyondSafeInteger(`param ${name}: shape`, inexact);
    if (shape.length > 0) {
      const product = shape.reduce((a, b) => a * b, 1);
      const isBlock = name.includes('@');
      if (isBlock ? product < elements : product !== elements) {
        throw new PserverError(
          'PSERVER_LENGTH_MISMATCH',
          `param ${name}: shape [${shape.join(', ')}] holds ${product} elements, content has ${elements}`,
        );
      }
    }
    withParamName(name, () => StoredTensor.checkConfig(name, elementType, request.optimizer));
    await this.notWhileFinishing();
    const tensor = withParamName(name, () =>
      StoredTensor.create({
        name,
        elementType,
        shape,
        content: param.content,
        config: request.optimizer,
        memory: this.shard.memory,
      }),
    );
    this.shard.put(tensor);
    return { shardEpoch: this.access.epoch };
  }

  /**
   * Creates (or, before FinishInitParams, replaces) this shard's part of a sparse table: its
   * buckets, empty.
   */
  async initTable(request: InitTableRequest__Output): Promise<InitTableResponse> {
    this.access.refuseIfStopping();
    await this.access.checkEpoch(request.context);
    const checked = checkTableSpec(request.spec);
    const name = checked.options.name;
    for (const tensor of this.shard.tensors.keys()) {
      if (tensor === name || tensor.startsWith(`${name}@`))
        throw new PserverError(
          'PSERVER_DUPLICATE_NAME',
          `spec.name: ${name} is a tensor on this shard`,
        );
    }
    await this.notWhileFinishing();
    let table;
    try {
      table = createShardTable(checked, this.shard.index, this.shard.shardCount);
    } catch (err) {
      throw tableError(err);
    }
    this.shard.putTable(table);
    return { shardEpoch: this.access.epoch };
  }

  /**
   * Commits a checkpoint of the initial values, then marks the shard initialized and answers: an
   * initialized shard always has a committed checkpoint, so a pserver that dies right after this
   * answer (or the spare taking its index) restores the initial values instead of serving an
   * empty shard that trainers would wait on. A failed checkpoint fails the call with its error
   * (a full disk: RESOURCE_EXHAUSTED) and leaves the shard uninitialized, so a retry works. A
   * call while one commits (a retry after a client deadline) gets that one's answer; a call after
   * success gets PSERVER_ALREADY_INITIALIZED, which initializing clients treat as success.
   */
  async finishInitParams(
    request: FinishInitParamsRequest__Output,
  ): Promise<FinishInitParamsResponse> {
    this.access.refuseIfStopping();
    await this.access.checkEpoch(request.context);
    if (this.finishing) return this.finishing;
    if (this.shard.initialized) throw alreadyInitialized();
    // Deliberately not cancelled with the call: a committed checkpoint is kept either way.
    const finishing = this.checkpointer.save('initialized').then(() => {
      this.shard.markInitialized();
      return { shardEpoch: this.access.epoch };
    });
    this.finishing = finishing;
    try {
      return await finishing;
    } finally {
      this.finishing = undefined;
    }
  }

  /**
   * Not while FinishInitParams commits: a tensor or table added then would be in the shard but
   * maybe not in the checkpoint. After it: "already initialized", or, if its checkpoint failed,
   * as before it.
   */
  private async notWhileFinishing(): Promise<void> {
    while (this.finishing) await this.finishing.catch(() => undefined);
    if (this.shard.initialized) throw alreadyInitialized();
  }
}

/** Runs `make`, naming the parameter in an optimizer's error. */
function withParamName<T>(name: string, make: () => T): T {
  try {
    return make();
  } catch (err) {
    if (err instanceof OptimizerError) err.message = `param ${name}: ${err.message}`;
    throw err;
  }
}

function alreadyInitialized(): PserverError {
  return new PserverError('PSERVER_ALREADY_INITIALIZED', 'the shard is already initialized');
}
