import { status } from '@grpc/grpc-js';
import type { Etcd3 } from 'etcd3';
import type { AppProcess } from '@pserver/local-cluster';
import { checkHealth, serviceNames } from '@pserver/rpc';
import type { FuzzSubject } from './fuzz-rpc';
import type { MasterFuzzModel, PendingTask } from './master-requests';
import { RawGrpcClient } from './raw-client';
import { decodeMessage, encodeMessage } from './wire';

/**
 * Everything of a job a master call may change: the Status answer (view, trainers, pass) and
 * every key under the job's etcd prefix with its revisions, read at one etcd revision, which
 * must not move either.
 */
export interface MasterState {
  status: Record<string, unknown>;
  revision: string;
  keys: Record<string, string>;
}

/**
 * A leading master under fuzzing: its state, the model the generators read (live trainers,
 * pending tasks, …), and its liveness. Accepted calls that would grow the job without bound are
 * undone before the next reference snapshot: a registered trainer is unregistered, a changed
 * shard count is set back, trainers are registered again when fewer than `minLive` live.
 */
export class MasterFuzzSubject implements FuzzSubject<MasterState> {
  readonly service = serviceNames.master;
  readonly client: RawGrpcClient;
  readonly maxMessageBytes = 16 * 1024 * 1024;
  readonly model: MasterFuzzModel = {
    live: [],
    ended: [],
    initOwner: undefined,
    pass: 0n,
    revision: 0n,
    pending: [],
  };

  constructor(
    readonly master: AppProcess,
    private readonly etcd: Etcd3,
    /** The job's etcd prefix, `/pserver/<job>/`. */
    private readonly root: string,
    private readonly shardCount: number,
    private readonly minLive = 3,
  ) {
    this.client = new RawGrpcClient(master.address);
  }

  async snapshot(): Promise<MasterState> {
    const statusReply = await this.call('Status', {});
    const range = await this.etcd.getAll().prefix(this.root).exec();
    const keys: Record<string, string> = {};
    for (const kv of range.kvs)
      keys[kv.key.toString()] =
        `${kv.mod_revision}/${kv.version}/${kv.lease} ${kv.value.toString()}`;
    this.refreshModel(statusReply, keys);
    return { status: statusReply, revision: range.header.revision, keys };
  }

  /**
   * Throws unless the master runs and leads. Keeps the live trainers' sessions alive too (their
   * deadlines live in the leader's memory, in no snapshot): a long run outlasts the session TTL.
   */
  async checkAlive(): Promise<void> {
    for (const trainerId of this.model.live) await this.call('KeepAlive', { trainerId });
    if (!this.master.process.running)
      throw this.master.process.failure(
        `exited (${JSON.stringify(this.master.process.exitStatus)})`,
      );
    const health = await checkHealth(this.master.address, serviceNames.master);
    if (health !== 'SERVING')
      throw this.master.process.failure(`health of the Master service ${health}`);
  }

  async onAccepted(method: string, response: Record<string, unknown>): Promise<void> {
    if (method === 'RegisterTrainer') {
      const id = BigInt(response.trainerId as string);
      await this.call('UnregisterTrainer', { trainerId: id });
      this.model.ended.push(id);
    }
    if (method === 'SetDesiredShards') {
      await this.call('SetDesiredShards', { shardCount: this.shardCount });
      await this.untilServing();
    }
    if (method === 'UnregisterTrainer') await this.keepTrainersLive();
  }

  /**
   * A new shard count re-assigns every index (a new epoch, which its pserver recovers and then
   * announces): waits until the view shows every index serving under the job's count again, so
   * the next reference snapshot sees a job at rest.
   */
  private async untilServing(): Promise<void> {
    const deadline = performance.now() + 30_000;
    for (;;) {
      const view = (await this.call('Status', {})).view as {
        shardCount: number;
        shards: { serving: boolean }[];
      } | null;
      if (view?.shardCount === this.shardCount && view.shards.every((s) => s.serving)) return;
      if (performance.now() > deadline)
        throw new Error(`the shards did not serve again under ${this.shardCount} within 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Registers trainers until `minLive` are live. */
  async keepTrainersLive(): Promise<void> {
    const live = ((await this.call('Status', {})).trainers as unknown[]).length;
    for (let i = live; i < this.minLive; i++)
      await this.call('RegisterTrainer', { name: `fuzz-${i}` });
  }

  close(): void {
    this.client.close();
  }

  private refreshModel(reply: Record<string, unknown>, keys: Record<string, string>): void {
    const model = this.model;
    const trainers = reply.trainers as { trainerId: string }[];
    const live = trainers.map((t) => BigInt(t.trainerId));
    for (const id of model.live)
      if (!live.includes(id) && !model.ended.includes(id)) model.ended.push(id);
    model.live = live;
    model.pass = BigInt((reply.pass as { pass: string } | null)?.pass ?? '0');
    model.revision = BigInt((reply.view as { revision: string } | null)?.revision ?? '0');
    const value = (key: string): string | undefined =>
      keys[key]?.slice(keys[key]!.indexOf(' ') + 1);
    const owner = value(`${this.root}init/owner`);
    model.initOwner = owner === undefined ? undefined : BigInt(owner);
    const pending: PendingTask[] = [];
    const taskPrefix = `${this.root}data/tasks/`;
    for (const key of Object.keys(keys)) {
      if (!key.startsWith(taskPrefix)) continue;
      const task = JSON.parse(value(key)!) as {
        status: string;
        trainer?: number;
        dispatch: number;
      };
      if (task.status !== 'pending') continue;
      pending.push({
        trainer: BigInt(task.trainer ?? 0),
        id: BigInt(key.slice(taskPrefix.length)),
        dispatch: BigInt(task.dispatch),
      });
    }
    model.pending = pending;
  }

  private async call(method: string, request: object): Promise<Record<string, unknown>> {
    const path = `/${this.service}/${method}`;
    let answer = await this.client.unary(path, encodeMessage(`${method}Request`, request));
    // The harness's own reads and idempotent calls are retried when the connection drops under
    // them (INTERNAL "RST_STREAM … Session closed", UNAVAILABLE): that is the transport, not the
    // master's answer. Calls that would act twice are not.
    for (
      let retry = 0;
      retry < 3 && idempotent.has(method) && transportFailure(answer.status);
      retry++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      answer = await this.client.unary(path, encodeMessage(`${method}Request`, request));
    }
    if (answer.status !== status.OK)
      throw new Error(
        `${method} from the fuzz harness failed: ${status[answer.status]} ${answer.details}`,
      );
    return decodeMessage(`${method}Response`, answer.body!);
  }
}

/** The harness's calls that may be sent again without acting twice. */
const idempotent = new Set(['Status', 'KeepAlive', 'SetDesiredShards']);

const transportFailure = (code: status): boolean =>
  code === status.UNAVAILABLE || code === status.INTERNAL;
