/**
 * The etcd keyspace of a job (DESIGN section 3): every key lives under `/pserver/<job>/`.
 *
 * | key | value | lease |
 * | --- | --- | --- |
 * | `master/election/<lease>` | the candidate's address | the candidate's |
 * | `config/desired` | desired shard count | none |
 * | `config/block-size` | block size in elements | none |
 * | `config/replicas` | replicas kept of each shard besides its primary | none |
 * | `config/consistency` | the job's consistency mode (JSON of a `JobConsistency`) | none |
 * | `pservers/<member>` | `{address, startedAtUnixMs, serving?: {index, epoch}}` | the pserver's |
 * | `assign/<i>` | `{member, address, shardCount, blockSize}` | the assigned pserver's |
 * | `replica/<i>/<member>` | `{member, address, primaryEpoch, inSync?}` | the replica's |
 * | `trainers/<id>` | `{name, registeredAtUnixMs, observer?}` | none |
 * | `trainers/next-id` | the next trainer id | none |
 * | `init/owner`, `init/done` | trainer id | none |
 * | `ckpt/<i>/latest`, `ckpt/<i>/hist/<epoch>-<seq>` | checkpoint meta (proto3 JSON) | none |
 * | `ckpt/<i>/served` | the epoch of the latest owner of index i that announced serving it | none |
 * | `reshape` | `{from, to, sources: {"<j>": meta}}`: a change of the count while the job was down | none |
 * | `reshape/restored/<i>` | the epoch of the owner of index i that restored its share of `reshape` | none |
 * | `reshape/live` | `{from, to}`: a change of the count asked while the job runs; every primary hands its shard back | none |
 * | `reshape/handed-back/<i>` | the epoch of the owner of index i that committed a final checkpoint and handed it back | none |
 * | `reshape/last-step/<i>` | SYNC: the highest step a push joined on index i when its primary saw `reshape/live`; every primary closes the steps through the highest of them, and no later one, before it hands back | none |
 * | `reshape/copied/<i>` | a live move: whether every receiver loaded index i's copy and caught up with its pushes; once every old index put one, `reshape/decision` says whether the primaries refuse pushes and hand back | none |
 * | `reshape/decision` | a live move: `{go, reason, index}`, put once by the first old primary to decide whether the change goes on (every receiver copied and caught up) or is rolled back (the job serves on at the old count) | none |
 * | `reshape/caught-up/<i>` | a live move: whether the receivers hold index i's whole shard (each applied its last push, and it keeps no replica); when every old index put true, none writes a final checkpoint | none |
 * | `data/spec` | the dataset: what SetDataset fixed, the task count | none |
 * | `data/files/<g>` | a group of the dataset's files with their sizes | none |
 * | `data/tasks/<id>` | one task's state in its latest pass | none |
 * | `data/pass` | the current pass | none |
 * | `finish/asked/<name>` | when that trainer asked the job to finish (Unix ms) | none |
 * | `finish/done` | `{finishedAtUnixMs, asked}`: the job is finished, for good | none |
 */
export class JobKeys {
  readonly root: string;

  constructor(readonly job: string) {
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(job)) {
      throw new Error(`job name ${JSON.stringify(job)}: 1–128 letters, digits, '.', '_' or '-'`);
    }
    this.root = `/pserver/${job}/`;
  }

  get electionPrefix(): string {
    return `${this.root}master/election/`;
  }

  get desired(): string {
    return `${this.root}config/desired`;
  }

  get blockSize(): string {
    return `${this.root}config/block-size`;
  }

  get replicas(): string {
    return `${this.root}config/replicas`;
  }

  get consistency(): string {
    return `${this.root}config/consistency`;
  }

  get pserversPrefix(): string {
    return `${this.root}pservers/`;
  }

  pserver(member: string): string {
    return `${this.pserversPrefix}${member}`;
  }

  get assignPrefix(): string {
    return `${this.root}assign/`;
  }

  assign(index: number): string {
    return `${this.assignPrefix}${index}`;
  }

  /** The index of an `assign/<i>` key, or undefined for another key. */
  indexOf(assignKey: string): number | undefined {
    if (!assignKey.startsWith(this.assignPrefix)) return undefined;
    const rest = assignKey.slice(this.assignPrefix.length);
    return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
  }

  /** Every shard's replica keys. */
  get replicaRoot(): string {
    return `${this.root}replica/`;
  }

  /** The replica keys of shard `index`. */
  replicaPrefix(index: number): string {
    return `${this.replicaRoot}${index}/`;
  }

  replica(index: number, member: string): string {
    return `${this.replicaPrefix(index)}${member}`;
  }

  /** The index and member of a `replica/<i>/<member>` key, or undefined for another key. */
  replicaOf(key: string): { index: number; member: string } | undefined {
    if (!key.startsWith(this.replicaRoot)) return undefined;
    const match = /^(0|[1-9]\d*)\/(.+)$/.exec(key.slice(this.replicaRoot.length));
    return match ? { index: Number(match[1]), member: match[2]! } : undefined;
  }

  get trainersPrefix(): string {
    return `${this.root}trainers/`;
  }

  trainer(id: number): string {
    return `${this.trainersPrefix}${id}`;
  }

  get nextTrainerId(): string {
    return `${this.root}trainers/next-id`;
  }

  get initOwner(): string {
    return `${this.root}init/owner`;
  }

  get initDone(): string {
    return `${this.root}init/done`;
  }

  /** Every index's checkpoint metas. */
  get checkpointRoot(): string {
    return `${this.root}ckpt/`;
  }

  checkpointLatest(index: number): string {
    return `${this.checkpointRoot}${index}/latest`;
  }

  /**
   * Written with each announcement that a shard is served, and outlives it: the next owner of the
   * index learns whose orphaned state it may adopt (the owner that served last).
   */
  lastServed(index: number): string {
    return `${this.checkpointRoot}${index}/served`;
  }

  checkpointHistoryPrefix(index: number): string {
    return `${this.checkpointRoot}${index}/hist/`;
  }

  /** History keys sort by epoch, then sequence number: both zero-padded. */
  checkpointHistory(index: number, epoch: number, seq: number): string {
    return `${this.checkpointHistoryPrefix(index)}${String(epoch).padStart(16, '0')}-${String(seq).padStart(10, '0')}`;
  }

  /**
   * A change of the shard count of an initialized job made while it was down: the count it was
   * and is, and each old index's latest checkpoint meta at that moment. Deleted by the leader once
   * every new index restored its share.
   */
  get reshape(): string {
    return `${this.root}reshape`;
  }

  /** The marks of the new indices that restored their share of `reshape`. */
  get reshapeRestoredPrefix(): string {
    return `${this.root}reshape/restored/`;
  }

  reshapeRestored(index: number): string {
    return `${this.reshapeRestoredPrefix}${index}`;
  }

  /** The index of a `reshape/restored/<i>` key, or undefined for another key. */
  restoredIndexOf(key: string): number | undefined {
    if (!key.startsWith(this.reshapeRestoredPrefix)) return undefined;
    const rest = key.slice(this.reshapeRestoredPrefix.length);
    return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
  }

  /**
   * A change of the shard count asked while the job runs (`{from, to}`): every primary commits a
   * final checkpoint and hands its index back; once all did, the leader turns it into `reshape`.
   */
  get liveReshape(): string {
    return `${this.root}reshape/live`;
  }

  /** The marks of the old indices whose owner handed them back for `reshape/live`. */
  get handedBackPrefix(): string {
    return `${this.root}reshape/handed-back/`;
  }

  handedBack(index: number): string {
    return `${this.handedBackPrefix}${index}`;
  }

  /** SYNC: each old index's highest step joined when its primary saw `reshape/live`. */
  get lastStepPrefix(): string {
    return `${this.root}reshape/last-step/`;
  }

  lastStep(index: number): string {
    return `${this.lastStepPrefix}${index}`;
  }

  /**
   * A live move: whether every receiver loaded each old index's copy and caught up with its
   * pushes (`true`/`false`), put while the shard serves; once every old index put one, the first
   * primary to decide puts `reshape/decision`.
   */
  get copiedPrefix(): string {
    return `${this.root}reshape/copied/`;
  }

  /**
   * A live move's decision (`{go, reason, index}`): put once, by the first old primary that makes
   * it, after every old index said whether its receivers copied and caught up. Every primary
   * follows it: refuse pushes and hand back, or roll the change back and serve on.
   */
  get moveDecision(): string {
    return `${this.root}reshape/decision`;
  }

  /**
   * A live move: whether the receivers hold each old index's shard (`true`/`false`: every index
   * of the new count has a receiver, each applied the shard's last push, and it keeps no
   * replica). When every old index put true, no final checkpoint is written.
   */
  get caughtUpPrefix(): string {
    return `${this.root}reshape/caught-up/`;
  }

  /**
   * A live move's receiver of each index of the new count (`{member, address}`, under the
   * receiver's lease): it copies the slices that index takes from the old primaries while they
   * serve, and follows their pushes. Put by the leader with `reshape/live`.
   */
  get receiverPrefix(): string {
    return `${this.root}reshape/receiver/`;
  }

  receiver(index: number): string {
    return `${this.receiverPrefix}${index}`;
  }

  /**
   * Each old index's last push when its primary handed it back, and the receivers that had
   * applied it by then (`{epoch, seq, moved}`): put with `reshape/handed-back/<i>`.
   */
  get finalSeqPrefix(): string {
    return `${this.root}reshape/final-seq/`;
  }

  finalSeq(index: number): string {
    return `${this.finalSeqPrefix}${index}`;
  }

  /** The index of a `<prefix><i>` key, or undefined for another key. */
  indexUnder(prefix: string, key: string): number | undefined {
    if (!key.startsWith(prefix)) return undefined;
    const rest = key.slice(prefix.length);
    return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
  }

  get datasetSpec(): string {
    return `${this.root}data/spec`;
  }

  get datasetFilesPrefix(): string {
    return `${this.root}data/files/`;
  }

  datasetFiles(group: number): string {
    return `${this.datasetFilesPrefix}${String(group).padStart(8, '0')}`;
  }

  /** Task keys sort by id: zero-padded. */
  get taskPrefix(): string {
    return `${this.root}data/tasks/`;
  }

  task(id: number): string {
    return `${this.taskPrefix}${String(id).padStart(12, '0')}`;
  }

  get pass(): string {
    return `${this.root}data/pass`;
  }

  /** Trainers that asked the job to finish, by name. */
  get finishAskedPrefix(): string {
    return `${this.root}finish/asked/`;
  }

  finishAsked(name: string): string {
    return `${this.finishAskedPrefix}${name}`;
  }

  /** Present once the job is finished; never deleted. */
  get finished(): string {
    return `${this.root}finish/done`;
  }
}
