import type { BackoffPolicy } from './backoff';

/**
 * Every wait between two attempts in the system, named for what it is for. A loop that tries
 * again uses one of these with `retry` (or `backoffDelayMs`), never constants of its own.
 */
export const backoffPolicies = {
  /**
   * A master granting a new election lease while etcd does not answer, and campaigning again
   * after candidacies that ended one after another: doubling from 200 ms to 2 s, at least half
   * of each wait kept (a stopped etcd is not hammered by every replica at once).
   */
  electionLease: { firstMs: 200, maxMs: 2_000, growth: 'doubling', jitter: 'half' },

  /**
   * A finished job's master looking again whether every pserver has left (and `pserverctl finish
   * --wait`, through the masters' view).
   */
  pserversLeftPoll: { firstMs: 500, maxMs: 500, growth: 'constant', jitter: 'none' },

  /**
   * A trainer waiting out a failover: a call to a shard that is busy, not served for now or whose
   * outcome is unknown, and a step run again under a new view. Full jitter, capped at 1 s so that
   * the trainer notices within about a second that the shard serves again.
   */
  shardFailover: { firstMs: 50, maxMs: 1_000, growth: 'doubling', jitter: 'full' },

  /**
   * A trainer's call to the masters when the one asked does not answer: the next replica at
   * once, then 50 ms longer each time, up to 500 ms, until the call's deadline.
   */
  masterFailover: { firstMs: 0, maxMs: 500, growth: { addMs: 50 }, jitter: 'none' },

  /** A trainer's stream of cluster views, opened again (to the leader) after it ended. */
  masterWatch: { firstMs: 100, maxMs: 100, growth: 'constant', jitter: 'none' },

  /** A trainer asking again whether the parameters are initialized while another one does it. */
  initDecision: { firstMs: 200, maxMs: 200, growth: 'constant', jitter: 'none' },

  /**
   * A trainer asking again for a task after the master said its session expired (a long pause):
   * the client registers again meanwhile.
   */
  expiredSession: { firstMs: 250, maxMs: 250, growth: 'constant', jitter: 'none' },

  /** A trainer asking again for a task when none is free and the master gives no retry hint. */
  taskPoll: { firstMs: 500, maxMs: 500, growth: 'constant', jitter: 'none' },

  /**
   * A trainer waiting for every shard to be served: the longest pause between two looks (a new
   * view from the master's watch ends it early).
   */
  viewPoll: { firstMs: 500, maxMs: 500, growth: 'constant', jitter: 'none' },

  /**
   * A pserver's write into etcd that must land while its tenure holds (announcing the shard it
   * serves, marking a replica in sync), tried again while etcd does not answer.
   */
  tenureWrite: { firstMs: 200, maxMs: 200, growth: 'constant', jitter: 'none' },

  /** Watching for the job's end again after etcd failed the watch or the read. */
  jobFinishedWatch: { firstMs: 1_000, maxMs: 1_000, growth: 'constant', jitter: 'none' },

  /**
   * `pserverctl drain` looking again whether another pserver serves the drained shard, and
   * `pserverctl shards` whether the job serves at the new count.
   */
  drainPoll: { firstMs: 200, maxMs: 200, growth: 'constant', jitter: 'none' },

  /** A primary sending one push to a replica again until the replica applied it. */
  replicaForward: { firstMs: 20, maxMs: 500, growth: 'doubling', jitter: 'none' },

  /** A replica fetching and loading its primary's copy of the shard again after a failure. */
  replicaJoin: { firstMs: 100, maxMs: 2_000, growth: 'doubling', jitter: 'none' },
} as const satisfies Record<string, BackoffPolicy>;
