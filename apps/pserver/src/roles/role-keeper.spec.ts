import { silentLogger } from '@pserver/logging';
import { Shard } from '../shard/shard';
import {
  RoleKeeper,
  type Assignment,
  type KeptPrimary,
  type KeptReplica,
  type RoleSource,
} from './role-keeper';

interface PrimaryTenure {
  index: number;
  epoch: number;
  lastServedEpoch: number;
}

interface ReplicaTenure {
  index: number;
  primaryEpoch: number;
  replica: { createRevision: number };
}

type Role = Assignment<PrimaryTenure, ReplicaTenure>;

/** The master, as the keeper sees it: roles handed out one by one, the current one readable. */
class FakeSource implements RoleSource<PrimaryTenure, ReplicaTenure> {
  alive = true;
  current: Role | undefined;
  withdrawn = 0;
  private waiting: ((role: Role) => void) | undefined;
  private readonly queued: Role[] = [];

  nextRole(signal: AbortSignal): Promise<Role> {
    const queued = this.queued.shift();
    if (queued) return Promise.resolve((this.current = queued));
    return new Promise((resolve, reject) => {
      this.waiting = (role) => resolve((this.current = role));
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
    });
  }

  /** The master gives this member `role`. */
  give(role: Role): void {
    if (this.waiting) this.waiting(role);
    else this.queued.push(role);
    this.waiting = undefined;
  }

  get waitingForRole(): boolean {
    return this.waiting !== undefined;
  }

  currentRole(): Promise<Role | undefined> {
    return Promise.resolve(this.current);
  }

  isAlive(): boolean {
    return this.alive;
  }

  withdrawServing(): Promise<void> {
    this.withdrawn++;
    return Promise.resolve();
  }
}

class FakePrimary implements KeptPrimary {
  readonly kind = 'primary';
  initialized = false;
  started = false;
  dropped = false;
  private ended: ((reason: string) => void) | undefined;

  constructor(
    readonly tenure: PrimaryTenure,
    readonly copy: Shard | undefined,
  ) {}

  start(): Promise<void> {
    this.started = true;
    return Promise.resolve();
  }

  onEnded(listener: (reason: string) => void): void {
    this.ended = listener;
  }

  /** The tenure ends (its assignment deleted, its lease lost). */
  end(reason: string): void {
    this.ended?.(reason);
  }

  drop(): void {
    this.dropped = true;
  }

  handedBack = false;
  /** Set to make the hand-back fail (its transaction did not commit). */
  handBackFails = false;
  /** Set to make the primaries decide to roll the change back. */
  rollsBack = false;
  /** The revision after which the keeper asked to hear of a change, each time it asked. */
  readonly askedAfter: (number | undefined)[] = [];
  private handBackAsked: ((to: number, revision: number) => void) | undefined;

  onHandBackAsked(listener: (to: number, revision: number) => void, after?: number): void {
    this.handBackAsked = listener;
    this.askedAfter.push(after);
  }

  /** The job asks its primaries to hand their shards back for `to` shards (change `revision`). */
  askHandBack(to: number, revision = 1): void {
    const listener = this.handBackAsked;
    this.handBackAsked = undefined;
    listener?.(to, revision);
  }

  handBack(): Promise<boolean> {
    if (this.handBackFails) return Promise.reject(new Error('the compare failed'));
    if (this.rollsBack) return Promise.resolve(false);
    this.handedBack = true;
    return Promise.resolve(true);
  }
}

class FakeReplica implements KeptReplica {
  readonly kind = 'replica';
  started = false;
  stopped = false;
  caughtUpCopy: Shard | undefined;
  private ended: ((reason: string) => void) | undefined;

  constructor(readonly tenure: ReplicaTenure) {}

  get index(): number {
    return this.tenure.index;
  }

  get primaryEpoch(): number {
    return this.tenure.primaryEpoch;
  }

  get keyRevision(): number {
    return this.tenure.replica.createRevision;
  }

  start(): void {
    this.started = true;
  }

  onEnded(listener: (reason: string) => void): void {
    this.ended = listener;
  }

  end(reason: string): void {
    this.ended?.(reason);
  }

  stop(): void {
    this.stopped = true;
  }
}

const primaryOf = (index: number, epoch: number, lastServedEpoch = 0): Role => ({
  kind: 'primary',
  tenure: { index, epoch, lastServedEpoch },
});
const replicaOf = (index: number, primaryEpoch: number, createRevision: number): Role => ({
  kind: 'replica',
  tenure: { index, primaryEpoch, replica: { createRevision } },
});

/** Resolves once every callback queued so far has run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function keeperWith(source: FakeSource) {
  const fences: string[] = [];
  let notServing = 0;
  const abort = new AbortController();
  const made: (FakePrimary | FakeReplica)[] = [];
  const keeper = new RoleKeeper<PrimaryTenure, ReplicaTenure, FakePrimary, FakeReplica>(
    {
      logger: silentLogger,
      fence: (reason) => {
        if (keeper.end('fenced')) fences.push(reason);
      },
      notServing: () => notServing++,
    },
    abort.signal,
  );
  const run = keeper.run(source, {
    primary: (tenure, copy) => {
      const role = new FakePrimary(tenure, copy);
      made.push(role);
      return role;
    },
    replica: (tenure) => {
      const role = new FakeReplica(tenure);
      made.push(role);
      return role;
    },
  });
  return { keeper, run, fences, made, abort, notServing: () => notServing };
}

describe('RoleKeeper', () => {
  it('is a spare until the master assigns an index, then serves it as its primary', async () => {
    const source = new FakeSource();
    const { keeper, run, made } = keeperWith(source);
    await settle();
    expect(keeper.current).toBeUndefined();
    expect(source.waitingForRole).toBe(true);
    source.give(primaryOf(1, 11));
    await run;
    expect(made).toHaveLength(1);
    const primary = keeper.current;
    expect(primary).toBeInstanceOf(FakePrimary);
    expect((primary as FakePrimary).started).toBe(true);
    expect((primary as FakePrimary).copy).toBeUndefined();
  });

  it('keeps a replica, and serves its copy when the master promotes it', async () => {
    const source = new FakeSource();
    source.give(replicaOf(0, 8, 100));
    const { keeper, run, made, fences } = keeperWith(source);
    await run;
    const replica = keeper.current as FakeReplica;
    expect(replica).toBeInstanceOf(FakeReplica);
    expect(replica.started).toBe(true);
    replica.caughtUpCopy = new Shard(0, 2, undefined);
    // The primary died; the master promoted this replica under a new epoch.
    source.current = primaryOf(0, 21, 8);
    replica.end('the replica key was deleted');
    await settle();
    expect(replica.stopped).toBe(true);
    const promoted = keeper.current as FakePrimary;
    expect(promoted).toBeInstanceOf(FakePrimary);
    expect(made).toHaveLength(2);
    expect(promoted.copy).toBe(replica.caughtUpCopy);
    expect(promoted.started).toBe(true);
    expect(fences).toEqual([]);
  });

  it('recovers rather than serve a copy when another primary served the shard after its own', async () => {
    const source = new FakeSource();
    source.give(replicaOf(0, 8, 100));
    const { keeper, run } = keeperWith(source);
    await run;
    const replica = keeper.current as FakeReplica;
    replica.caughtUpCopy = new Shard(0, 2, undefined);
    source.current = primaryOf(0, 30, 21);
    replica.end('the replica key was deleted');
    await settle();
    expect((keeper.current as FakePrimary).copy).toBeUndefined();
  });

  it('drops a copy that is not caught up, and waits for a role again when it has none', async () => {
    const source = new FakeSource();
    source.give(replicaOf(0, 8, 100));
    const { keeper, run } = keeperWith(source);
    await run;
    const replica = keeper.current as FakeReplica;
    source.current = undefined;
    replica.end('the replica key was deleted');
    await settle();
    expect(replica.stopped).toBe(true);
    expect(keeper.current).toBeUndefined();
    expect(source.waitingForRole).toBe(true);
    source.give(replicaOf(1, 9, 200));
    await settle();
    expect((keeper.current as FakeReplica).index).toBe(1);
  });

  it('fences when a replica key ends but the same key is still there', async () => {
    const source = new FakeSource();
    source.give(replicaOf(0, 8, 100));
    const { keeper, run, fences } = keeperWith(source);
    await run;
    (keeper.current as FakeReplica).end('its watch failed');
    await settle();
    expect(fences).toEqual([
      "the replica's watch ended while it is still a replica (its watch failed)",
    ]);
    expect(keeper.ended).toBe('fenced');
  });

  it('fences a primary whose initialized shard loses its tenure', async () => {
    const source = new FakeSource();
    source.give(primaryOf(1, 11));
    const { keeper, run, fences } = keeperWith(source);
    await run;
    const primary = keeper.current as FakePrimary;
    primary.initialized = true;
    primary.end('assign/1 was deleted');
    await settle();
    expect(fences).toEqual(['assign/1 was deleted']);
    expect(primary.dropped).toBe(false);
  });

  it('fences a primary whose lease is gone, initialized or not', async () => {
    const source = new FakeSource();
    source.give(primaryOf(1, 11));
    const { keeper, run, fences } = keeperWith(source);
    await run;
    source.alive = false;
    (keeper.current as FakePrimary).end('the lease expired');
    await settle();
    expect(fences).toEqual(['the lease expired']);
  });

  it('drops a shard re-assigned before initialization and takes the next index', async () => {
    const source = new FakeSource();
    source.give(primaryOf(1, 11));
    const { keeper, run, fences, notServing } = keeperWith(source);
    await run;
    const first = keeper.current as FakePrimary;
    first.end('assign/1 was deleted');
    await settle();
    expect(first.dropped).toBe(true);
    expect(notServing()).toBe(1);
    expect(source.withdrawn).toBe(1);
    expect(keeper.current).toBeUndefined();
    source.give(primaryOf(2, 14));
    await settle();
    expect((keeper.current as FakePrimary).tenure.index).toBe(2);
    expect(fences).toEqual([]);
  });

  it('fences rather than take up again the very assignment it lost', async () => {
    const source = new FakeSource();
    source.give(primaryOf(1, 11));
    const { keeper, run, fences } = keeperWith(source);
    await run;
    (keeper.current as FakePrimary).end('its watch failed');
    await settle();
    source.give(primaryOf(1, 11));
    await settle();
    expect(fences).toEqual(['assign/1 with epoch 11 was lost once already']);
  });

  it('takes up no role once drained (stopping): a tenure that ends then changes nothing', async () => {
    const source = new FakeSource();
    source.give(primaryOf(1, 11));
    const { keeper, run, fences, made } = keeperWith(source);
    await run;
    const primary = keeper.current as FakePrimary;
    expect(keeper.end('stopping')).toBe(true);
    // The stop revokes the lease: the assignment goes with it.
    source.alive = false;
    primary.end('the lease was revoked');
    await settle();
    expect(fences).toEqual([]);
    expect(keeper.current).toBe(primary);
    expect(made).toHaveLength(1);
    expect(keeper.end('fenced')).toBe(false);
    expect(keeper.ended).toBe('stopping');
  });

  it('says a stop after the job finished is the end of its part', async () => {
    const source = new FakeSource();
    source.give(primaryOf(0, 5));
    const { keeper, run } = keeperWith(source);
    await run;
    expect(keeper.jobFinished).toBe(false);
    keeper.finishJob();
    keeper.end('stopping');
    expect(keeper.jobFinished).toBe(true);
    expect(keeper.ended).toBe('stopping');
  });

  it('stops waiting as a spare when the process stops', async () => {
    const source = new FakeSource();
    const { run, abort } = keeperWith(source);
    await settle();
    abort.abort(new Error('stopping'));
    await expect(run).rejects.toThrow('stopping');
  });

  it('hands a served shard back when the job changes its count, then waits as a spare for an index of the new count', async () => {
    const source = new FakeSource();
    source.give(primaryOf(1, 11));
    const { keeper, run, made, fences } = keeperWith(source);
    await run;
    const primary = keeper.current as FakePrimary;
    primary.initialized = true;
    primary.askHandBack(3);
    await settle();
    expect(primary.handedBack).toBe(true);
    expect(keeper.current).toBeUndefined();
    expect(source.withdrawn).toBe(1);
    expect(source.waitingForRole).toBe(true);
    // The tenure it handed back ends afterwards: that is no loss of the role held now.
    primary.end('assign/1 was deleted');
    source.give(primaryOf(2, 40));
    await settle();
    expect(made).toHaveLength(2);
    expect((keeper.current as FakePrimary).tenure.epoch).toBe(40);
    expect(fences).toEqual([]);
  });

  it('serves on when the change is rolled back, and hands back for a change asked after it', async () => {
    const source = new FakeSource();
    source.give(primaryOf(0, 9));
    const { keeper, run, fences } = keeperWith(source);
    await run;
    const primary = keeper.current as FakePrimary;
    primary.initialized = true;
    expect(primary.askedAfter).toEqual([0]);
    primary.rollsBack = true;
    primary.askHandBack(3, 70);
    await settle();
    expect(keeper.current).toBe(primary);
    expect(source.withdrawn).toBe(0);
    expect(source.waitingForRole).toBe(false);
    // Asked again, for changes after the one rolled back only.
    expect(primary.askedAfter).toEqual([0, 70]);
    primary.rollsBack = false;
    primary.askHandBack(3, 90);
    await settle();
    expect(primary.handedBack).toBe(true);
    expect(keeper.current).toBeUndefined();
    expect(fences).toEqual([]);
  });

  it('fences when the hand-back does not commit', async () => {
    const source = new FakeSource();
    source.give(primaryOf(0, 9));
    const { keeper, run, fences } = keeperWith(source);
    await run;
    const primary = keeper.current as FakePrimary;
    primary.handBackFails = true;
    primary.askHandBack(2);
    await settle();
    expect(fences).toEqual(['handing the shard back failed: the compare failed']);
    expect(source.waitingForRole).toBe(false);
  });
});
