import { randomUUID } from 'node:crypto';
import type { Etcd3 } from 'etcd3';
import type { Logger } from '@pserver/logging';
import type { Leader } from './election';
import { CoordinationError } from './errors';
import type { JobKeys } from './keys';

/** What `trainers/<id>` holds. */
export interface TrainerValue {
  name: string;
  registeredAtUnixMs: number;
  nonce?: string;
  /** Set for a client that never takes steps (not in the SYNC and SSP roster). */
  observer?: boolean;
}

export interface TrainerSession {
  id: number;
  name: string;
  /** Reads and never takes steps: not in the SYNC and SSP roster. */
  observer: boolean;
  registeredAtUnixMs: number;
  /** Monotonic time (`performance.now()`) after which the session has ended. */
  deadline: number;
}

/**
 * The trainer registry of the leading master. Registrations live in etcd (`trainers/<id>`, ids
 * from a counter never reused); session deadlines live in the leader's memory, refreshed by
 * KeepAlive. A new leader loads the registrations and gives every session a full TTL (DESIGN
 * section 3: a leader change alone never expires a live trainer); it then ends the sessions that
 * do not keep alive, deleting their keys.
 */
export class TrainerSessions {
  private readonly sessions = new Map<number, TrainerSession>();
  private readonly endListeners = new Set<(id: number, expired: boolean) => void | Promise<void>>();
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly client: Etcd3,
    private readonly keys: JobKeys,
    private readonly leader: Leader,
    private readonly ttlMs: number,
    private readonly logger: Logger,
  ) {}

  get sessionTtlMs(): number {
    return this.ttlMs;
  }

  /** Loads the registrations in etcd, each with a full TTL from now. */
  async load(): Promise<void> {
    const registered = await this.client.getAll().prefix(this.keys.trainersPrefix).strings();
    for (const [key, json] of Object.entries(registered)) {
      if (key === this.keys.nextTrainerId) continue;
      const id = Number(key.slice(this.keys.trainersPrefix.length));
      const value = JSON.parse(json) as TrainerValue;
      this.sessions.set(id, {
        id,
        name: value.name,
        observer: value.observer === true,
        registeredAtUnixMs: value.registeredAtUnixMs,
        deadline: performance.now() + this.ttlMs,
      });
    }
    this.logger.info('trainer sessions loaded', { trainers: this.sessions.size });
  }

  /** Registers a trainer under a new id, never used before in the job. */
  register(name: string, observer = false): Promise<TrainerSession> {
    const run = this.chain.then(() => this.registerNow(name, observer));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Extends a live session; false when it has ended (the trainer must register again). */
  keepAlive(id: number): boolean {
    const session = this.sessions.get(id);
    if (!session || performance.now() >= session.deadline) return false;
    session.deadline = performance.now() + this.ttlMs;
    return true;
  }

  isAlive(id: number): boolean {
    const session = this.sessions.get(id);
    return session !== undefined && performance.now() < session.deadline;
  }

  /** Throws MASTER_SESSION_EXPIRED unless the trainer's session is alive. */
  requireAlive(id: number): void {
    if (!this.isAlive(id)) {
      throw new CoordinationError(
        'MASTER_SESSION_EXPIRED',
        `trainer ${id}: no live session (register again for a new id)`,
      );
    }
  }

  list(): TrainerSession[] {
    return [...this.sessions.values()].filter((s) => performance.now() < s.deadline);
  }

  /** Tells `listener` of each session that ends, and whether it expired (no KeepAlive in time). */
  onEnd(listener: (id: number, expired: boolean) => void | Promise<void>): void {
    this.endListeners.add(listener);
  }

  /** Ends a session now (UnregisterTrainer, or its deadline passed: `expired`). */
  async end(id: number, reason: string, expired = false): Promise<void> {
    if (!this.sessions.delete(id)) return;
    this.logger.info('trainer session ended', { trainer: id, reason });
    await this.client
      .if(this.leader.key, 'Create', '==', this.leader.revision)
      .then(this.client.delete().key(this.keys.trainer(id)))
      .commit();
    for (const listener of this.endListeners) await listener(id, expired);
  }

  /** Ends every session whose deadline has passed. */
  async sweep(): Promise<void> {
    const now = performance.now();
    for (const session of [...this.sessions.values()]) {
      if (now >= session.deadline)
        await this.end(session.id, 'no KeepAlive within the session TTL', true);
    }
  }

  private async registerNow(name: string, observer: boolean): Promise<TrainerSession> {
    const nonce = randomUUID();
    for (let attempt = 0; attempt < 10; attempt++) {
      const counter = (await this.client.get(this.keys.nextTrainerId).exec()).kvs[0];
      const id = counter ? Number(counter.value.toString()) : 1;
      const registeredAtUnixMs = Date.now();
      const value = JSON.stringify({
        name,
        registeredAtUnixMs,
        nonce,
        ...(observer && { observer }),
      } satisfies TrainerValue);
      let succeeded = false;
      try {
        const result = await this.client
          .if(this.leader.key, 'Create', '==', this.leader.revision)
          .and(this.keys.nextTrainerId, 'Mod', '==', counter ? Number(counter.mod_revision) : 0)
          .then(
            this.client.put(this.keys.nextTrainerId).value(String(id + 1)),
            this.client.put(this.keys.trainer(id)).value(value),
          )
          .commit();
        succeeded = result.succeeded;
      } catch {
        // Unclear outcome: the read-back below decides.
      }
      if (!succeeded) succeeded = (await this.client.get(this.keys.trainer(id)).string()) === value;
      if (succeeded) {
        const session = {
          id,
          name,
          observer,
          registeredAtUnixMs,
          deadline: performance.now() + this.ttlMs,
        };
        this.sessions.set(id, session);
        this.logger.info('trainer registered', { trainer: id, trainerName: name, observer });
        return session;
      }
      if ((await this.client.get(this.leader.key).exists()) === false) break;
    }
    throw new CoordinationError(
      'MASTER_NOT_LEADER',
      'RegisterTrainer: this master is no longer the leader',
    );
  }
}
