import type { Etcd3 } from 'etcd3';
import type { JobConsistency } from './consistency';
import { CoordinationError } from './errors';
import type { Leader } from './election';
import { readJobState, type JobState } from './job-state';
import type { JobKeys } from './keys';
import { askLiveReshape, beginReshape } from './master-reshape';
import type { TrainerSessions } from './trainer-sessions';

export type InitDecision = 'INIT_DECISION_INITIALIZE' | 'INIT_DECISION_WAIT' | 'INIT_DECISION_DONE';

/**
 * The writes a leading master makes, each in a transaction guarded by its term (the create
 * revision of its election key): a master that lost its key writes nothing.
 */
export class MasterTerm {
  constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    readonly leader: Leader,
  ) {}

  /** Writes the job's shard count, block size, replicas and mode where the job has none yet. */
  async writeConfigIfAbsent(config: {
    desired?: number;
    blockSize: number;
    replicas?: number;
    consistency?: JobConsistency;
  }): Promise<void> {
    const writes: [string, string][] = [[this.keys.blockSize, String(config.blockSize)]];
    if (config.replicas !== undefined) writes.push([this.keys.replicas, String(config.replicas)]);
    if (config.consistency !== undefined)
      writes.push([this.keys.consistency, JSON.stringify(config.consistency)]);
    if (config.desired !== undefined) writes.push([this.keys.desired, String(config.desired)]);
    for (const [key, value] of writes) {
      await this.guarded()
        .and(key, 'Create', '==', 0)
        .then(this.client.put(key).value(value))
        .commit();
    }
  }

  /**
   * Exactly one live trainer initializes: the first to ask, or the next one once the chosen one's
   * session has ended before FinishInit (PaddlePaddle's `/init_ps`).
   */
  async beginInit(
    trainer: number,
    sessions: TrainerSessions,
  ): Promise<{ decision: InitDecision; owner: number }> {
    sessions.requireAlive(trainer);
    for (let attempt = 0; attempt < 5; attempt++) {
      const [ownerRange, done] = await Promise.all([
        this.client.get(this.keys.initOwner).exec(),
        this.client.get(this.keys.initDone).exists(),
      ]);
      if (done) return { decision: 'INIT_DECISION_DONE', owner: 0 };
      const ownerKv = ownerRange.kvs[0];
      const owner = ownerKv ? Number(ownerKv.value.toString()) : undefined;
      if (owner === trainer) return { decision: 'INIT_DECISION_INITIALIZE', owner: trainer };
      if (owner !== undefined && sessions.isAlive(owner))
        return { decision: 'INIT_DECISION_WAIT', owner };
      const claim = await this.guarded()
        .and(this.keys.initOwner, 'Mod', '==', ownerKv ? Number(ownerKv.mod_revision) : 0)
        .then(this.client.put(this.keys.initOwner).value(String(trainer)))
        .commit();
      if (claim.succeeded) return { decision: 'INIT_DECISION_INITIALIZE', owner: trainer };
    }
    throw new CoordinationError(
      'MASTER_NOT_LEADER',
      'BeginInit: the init owner could not be settled; ask again',
    );
  }

  /** Marks the parameters initialized; only the chosen trainer may. Idempotent. */
  async finishInit(trainer: number): Promise<void> {
    const result = await this.guarded()
      .and(this.keys.initOwner, 'Value', '==', String(trainer))
      .then(this.client.put(this.keys.initDone).value(String(trainer)))
      .commit();
    if (result.succeeded || (await this.client.get(this.keys.initDone).exists())) return;
    throw new CoordinationError(
      'MASTER_NOT_INIT_OWNER',
      `FinishInit: trainer ${trainer} is not the trainer chosen to initialize`,
    );
  }

  /** Frees the init election when its owner's session ended. */
  async releaseInitOwner(trainer: number): Promise<void> {
    await this.guarded()
      .and(this.keys.initOwner, 'Value', '==', String(trainer))
      .then(this.client.delete().key(this.keys.initOwner))
      .commit();
  }

  /**
   * Changes the desired shard count. Before the parameters are initialized, refused while a
   * pserver holds an index the new count would drop. After, a job that is down changes it at
   * once, with the old indices' checkpoints recorded for the new ones to restore their shares
   * from (`beginReshape`); a running one is asked to hand its shards back first
   * (`askLiveReshape`). The same count is a no-op.
   */
  async setDesired(count: number, state: JobState): Promise<void> {
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new CoordinationError(
        'MASTER_INVALID_ARGUMENT',
        `shardCount: must be an integer ≥ 1, got ${count}`,
      );
    }
    if (state.initDone) {
      const term = { client: this.client, keys: this.keys, leader: this.leader };
      const readState = (): Promise<JobState> => readJobState(this.client, this.keys);
      const running =
        state.assignments.length > 0 ||
        state.replicaAssignments.length > 0 ||
        state.liveReshape !== undefined;
      if (running) return askLiveReshape(term, count, readState, state);
      try {
        await beginReshape(term, count, readState, state);
      } catch (err) {
        // The job started since the state was read: ask it to hand its shards back instead.
        if (!(err instanceof CoordinationError) || err.code !== 'MASTER_SHARDS_IN_USE') throw err;
        await askLiveReshape(term, count, readState, await readState());
      }
      return;
    }
    const orphaned = state.assignments.filter((a) => a.index >= count);
    if (orphaned.length > 0) {
      throw new CoordinationError(
        'MASTER_SHARDS_IN_USE',
        `shardCount: ${count} would orphan live shards ${orphaned.map((a) => `${a.index} (${a.member})`).join(', ')}; stop them first`,
      );
    }
    const result = await this.guarded()
      .and(this.keys.initDone, 'Create', '==', 0)
      .then(this.client.put(this.keys.desired).value(String(count)))
      .commit();
    if (result.succeeded) return;
    // Initialized since the state was read: the change is a reshape now.
    const fresh = await readJobState(this.client, this.keys);
    if (fresh.initDone) return this.setDesired(count, fresh);
    throw new CoordinationError(
      'MASTER_NOT_LEADER',
      'SetDesiredShards: leadership or initialization changed; ask again',
    );
  }

  /**
   * Records that trainer `name` asked the job to finish (undefined: an operator asked) and
   * finishes it once `trainers` names asked (0 or 1: at once). A finished job stays finished.
   */
  async finishJob(
    name: string | undefined,
    trainers: number,
  ): Promise<{ finished: boolean; asked: string[] }> {
    if (name !== undefined) {
      const result = await this.guarded()
        .then(this.client.put(this.keys.finishAsked(name)).value(String(Date.now())))
        .commit();
      if (!result.succeeded) throw notLeading('FinishJob');
    }
    const prefix = this.keys.finishAskedPrefix;
    const asked = (await this.client.getAll().prefix(prefix).keys()).map((k) =>
      k.slice(prefix.length),
    );
    if (asked.length >= trainers) {
      const result = await this.guarded()
        .and(this.keys.finished, 'Create', '==', 0)
        .then(
          this.client
            .put(this.keys.finished)
            .value(JSON.stringify({ finishedAtUnixMs: Date.now(), asked })),
        )
        .commit();
      if (!result.succeeded && !(await this.client.get(this.keys.finished).exists()))
        throw notLeading('FinishJob');
    }
    return { finished: await this.client.get(this.keys.finished).exists(), asked };
  }

  private guarded(): ReturnType<Etcd3['if']> {
    return this.client.if(this.leader.key, 'Create', '==', this.leader.revision);
  }
}

function notLeading(method: string): CoordinationError {
  return new CoordinationError(
    'MASTER_NOT_LEADER',
    `${method}: this master no longer leads; ask again`,
  );
}
