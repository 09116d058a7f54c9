import { conventionalRegistry, optionalGauge } from '@pserver/rpc';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { GetShardStatusResponse } from '@pserver/proto';

/** What the pserver's metrics are read from, at each scrape. */
export interface PserverMetricSources {
  /** The shard's status while it serves one. */
  status: () => GetShardStatusResponse | undefined;
  /** Monotonic time (`performance.now()`) until which the lease may be trusted (cluster mode). */
  leaseValidUntil: () => number | undefined;
  /** Replication: as a primary, its replicas; as a replica, its copy. Undefined otherwise. */
  replication: () => ReplicationStatus | undefined;
  /** Reads and SYNC pushes parked until the shard's clock lets them go, and their wait so far. */
  parked: () => { calls: number; waitedSeconds: number } | undefined;
}

/** What replication metrics read. */
export type ReplicationStatus =
  | {
      role: 'primary';
      appliedSeq: number;
      replicas: { member: string; acked: number; inSync: boolean }[];
    }
  | {
      role: 'replica';
      appliedSeq: number;
      inSync: boolean;
      digests: { checked: number; mismatched: number };
    };

/**
 * The pserver's Prometheus registry: Node.js process metrics, the RPC metrics the server's
 * interceptor records (calls by method, status and error code — stale epochs among them —,
 * latency, payload bytes), and the shard's state read at each scrape.
 */
export interface PserverMetrics {
  registry: Registry;
  duplicatePushes: Counter;
  lostContributions: Counter;
  checkpoints: { seconds: Histogram; failures: Counter };
  /** From a hand-back asked (a change of the running job's shard count) to the shard handed back. */
  handBackSeconds: Histogram<'final_checkpoint'>;
  /** A new owner's share of the old count's checkpoints: bytes read, and the time to serve it. */
  reshapeRestore: { bytes: Counter; seconds: Histogram };
  /**
   * Live moves: the slices this pserver received (bytes loaded, each old shard's copy timed), and
   * the shares it served as received.
   */
  moves: {
    copiedBytes: Counter;
    copySeconds: Histogram;
    sharesServed: Counter;
    rolledBack: Counter;
  };
}

export function pserverMetrics(sources: PserverMetricSources): PserverMetrics {
  const registry = conventionalRegistry('pserver');
  // Absent while it does not apply (no shard served yet, standalone, no checkpoint yet).
  const gauge = (name: string, help: string, read: () => number | undefined): void =>
    optionalGauge(registry, name, help, read);
  const status = (): GetShardStatusResponse | undefined => sources.status();
  gauge('pserver_serving', '1 while this process serves a shard, 0 before (or as a spare).', () =>
    status() ? 1 : 0,
  );
  gauge('pserver_shard_index', 'The shard index served.', () => status()?.index);
  gauge('pserver_shard_epoch', 'The shard epoch served.', () => num(status()?.shardEpoch));
  gauge('pserver_shard_bytes', 'Bytes of all tensor contents held.', () =>
    num(status()?.totalBytes),
  );
  gauge('pserver_trainers', 'Trainers with a step mark on this shard.', () => status()?.trainers);
  gauge('pserver_push_bytes_in_flight', 'Bytes of pushes being received or applied.', () =>
    num(status()?.pushBytesInFlight),
  );
  new Counter({
    name: 'pserver_updates_applied_total',
    help: 'Updates applied to the shard since its state began (restored ones included).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(num(status()?.updatesApplied) ?? 0);
    },
  });
  gauge(
    'pserver_checkpoint_last_success_timestamp_seconds',
    'When the last committed checkpoint was taken (Unix seconds): alert on time() minus it.',
    () => {
      const ns = num(status()?.lastCheckpoint?.timestampNs);
      return ns === undefined ? undefined : ns / 1e9;
    },
  );
  gauge('pserver_checkpoint_bytes', 'Size of the last committed checkpoint.', () =>
    num(status()?.lastCheckpoint?.size),
  );
  gauge(
    'pserver_version',
    "SYNC: the steps closed; otherwise the pushes applied since the shard's state began.",
    () => num(status()?.version),
  );
  gauge(
    'pserver_min_clock',
    "SYNC: the steps closed; SSP: the slowest roster trainer's last step here (0 in ASYNC).",
    () => num(status()?.minClock),
  );
  gauge(
    'pserver_parked_calls',
    'Reads (SYNC, SSP) and pushes (SYNC) waiting for the clock: all trainers parked means a straggler.',
    () => sources.parked()?.calls,
  );
  new Counter({
    name: 'pserver_parked_seconds_total',
    help: 'Time reads and pushes spent parked for the clock, summed over calls: the wait at the barrier.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(sources.parked()?.waitedSeconds ?? 0);
    },
  });
  tableMetrics(registry, status);
  gauge(
    'pserver_lease_deadline_margin_seconds',
    'Time left before this pserver stops trusting its lease without a keep-alive (cluster mode).',
    () => {
      const until = sources.leaseValidUntil();
      return until === undefined ? undefined : (until - performance.now()) / 1000;
    },
  );
  replicationMetrics(registry, sources.replication);
  return {
    registry,
    duplicatePushes: new Counter({
      name: 'pserver_duplicate_pushes_total',
      help: 'Pushes acknowledged as duplicates (a retried step) and not applied again.',
      registers: [registry],
    }),
    lostContributions: new Counter({
      name: 'pserver_sync_lost_contributions_total',
      help: 'SYNC: contributions a restored shard closed steps without (acknowledged before its crash, lost with it).',
      registers: [registry],
    }),
    checkpoints: {
      seconds: new Histogram({
        name: 'pserver_checkpoint_duration_seconds',
        help: 'How long committed checkpoints took to write and commit.',
        buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
        registers: [registry],
      }),
      failures: new Counter({
        name: 'pserver_checkpoint_failures_total',
        help: 'Checkpoints that failed (the previous one stays the latest).',
        registers: [registry],
      }),
    },
    handBackSeconds: new Histogram({
      name: 'pserver_hand_back_duration_seconds',
      help: 'How long handing a served shard back took (the running job\'s shard count changing), from refusing pushes: the receivers of a live move caught up, a final checkpoint committed (final_checkpoint="false" when the receivers held the whole job), the index handed back.',
      labelNames: ['final_checkpoint'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    }),
    reshapeRestore: {
      bytes: new Counter({
        name: 'pserver_reshape_restored_bytes_total',
        help: "Bytes of the old count's checkpoints read to restore this pserver's shares after changes of the shard count.",
        registers: [registry],
      }),
      seconds: new Histogram({
        name: 'pserver_reshape_restore_duration_seconds',
        help: "Restoring a share of the old count's checkpoints after a change of the shard count: read, then committed at the new count, before the shard is served.",
        buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
        registers: [registry],
      }),
    },
    moves: {
      copiedBytes: new Counter({
        name: 'pserver_move_copied_bytes_total',
        help: 'Bytes of the slices this pserver loaded as the receiver of live changes of the shard count (the old shards serving meanwhile).',
        registers: [registry],
      }),
      copySeconds: new Histogram({
        name: 'pserver_move_copy_duration_seconds',
        help: "Copying one old shard's slices as the receiver of a live change of the shard count: fetched and loaded, while the old shard serves.",
        buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
        registers: [registry],
      }),
      sharesServed: new Counter({
        name: 'pserver_moved_shares_total',
        help: 'Shares of a new shard count this pserver served as its receiver copied them live (nothing restored from checkpoints).',
        registers: [registry],
      }),
      rolledBack: new Counter({
        name: 'pserver_moves_rolled_back_total',
        help: 'Live changes of the shard count this pserver, as an old primary, rolled back and served on: a receiver had not copied and caught up within --move-ready-timeout-s.',
        registers: [registry],
      }),
    },
  };
}

/**
 * Replication series (DESIGN section 8): the pushes applied (a primary's sequence number, or how
 * far a replica's copy is), and on a primary each replica's lag in pushes and how many are in
 * sync (promotable): an alarm when it stays below the job's replicas.
 */
function replicationMetrics(registry: Registry, read: () => ReplicationStatus | undefined): void {
  optionalGauge(
    registry,
    'pserver_replication_applied_seq',
    "Pushes applied by this shard's primary, or by this replica's copy of it.",
    () => read()?.appliedSeq,
  );
  new Gauge({
    name: 'pserver_replica_lag_pushes',
    help: 'Pushes the primary applied that a replica has not acknowledged yet.',
    labelNames: ['replica'],
    registers: [registry],
    collect() {
      this.reset();
      const status = read();
      if (status?.role !== 'primary') return;
      for (const r of status.replicas) this.set({ replica: r.member }, status.appliedSeq - r.acked);
    },
  });
  const digestCounter = (
    name: string,
    help: string,
    pick: (d: { checked: number; mismatched: number }) => number,
  ) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const status = read();
        this.reset();
        if (status?.role === 'replica') this.inc(pick(status.digests));
      },
    });
  digestCounter(
    'pserver_replica_digest_checks_total',
    "Digests of the primary's shard this replica compared with its copy.",
    (d) => d.checked,
  );
  digestCounter(
    'pserver_replica_digest_mismatches_total',
    "Digests that differed from this replica's copy: alarm on any (the copy is not the primary's).",
    (d) => d.mismatched,
  );
  optionalGauge(
    registry,
    'pserver_replicas_in_sync',
    "A primary's replicas that hold every acknowledged push (promotable); a replica: 1 when it is in sync.",
    () => {
      const status = read();
      if (!status) return undefined;
      return status.role === 'primary'
        ? status.replicas.filter((r) => r.inSync).length
        : Number(status.inSync);
    },
  );
}

/**
 * Per-table series, read from the status at each scrape: rows held (a gauge) and rows created,
 * not admitted and evicted since the process started (counters: the table's own totals, which
 * only grow while the process lives).
 */
function tableMetrics(registry: Registry, status: () => GetShardStatusResponse | undefined): void {
  const tables = () => status()?.tables ?? [];
  new Gauge({
    name: 'pserver_table_rows',
    help: 'Rows a sparse table holds on this shard.',
    labelNames: ['table'],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of tables()) this.set({ table: t.name ?? '' }, num(t.rows) ?? 0);
    },
  });
  const counter = (name: string, help: string, read: (t: TableStatusOf) => unknown): void => {
    new Counter({
      name,
      help,
      labelNames: ['table'],
      registers: [registry],
      collect() {
        this.reset();
        for (const t of tables()) {
          const value = num(read(t) as { toString(): string } | undefined) ?? 0;
          if (value > 0) this.inc({ table: t.name ?? '' }, value);
        }
      },
    });
  };
  counter(
    'pserver_table_rows_created_total',
    'Rows created in a sparse table.',
    (t) => t.rowsCreated,
  );
  counter(
    'pserver_table_rows_rejected_total',
    'Ids not admitted to a sparse table (their gradients dropped).',
    (t) => t.rowsRejected,
  );
  counter(
    'pserver_table_rows_evicted_total',
    'Rows evicted from a sparse table.',
    (t) => t.rowsEvicted,
  );
}

type TableStatusOf = NonNullable<GetShardStatusResponse['tables']>[number];

/** A uint64 field of a status (a number, a string or a Long) as a number. */
const num = (value: { toString(): string } | undefined | null): number | undefined =>
  value === undefined || value === null ? undefined : Number(value.toString());
