import { conventionalRegistry, optionalGauge } from '@pserver/rpc';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { LeaderRole } from './service/leader-role';

/** What the leader did to the shards: each kind of assignment it committed. */
export type AssignmentKind = 'spare' | 'promotion' | 'replica';

/**
 * The master's Prometheus registry: Node.js process metrics, the RPC metrics the server's
 * interceptor records, the assignments this process committed while it led (a failover is a
 * `spare` or a `promotion` after the job's first assignments), and, read at each scrape,
 * leadership, live trainers, the current pass's tasks by state and a change of the shard count
 * under way (those only on the leader, which holds them).
 */
export function masterMetrics(role: () => LeaderRole | undefined): {
  registry: Registry;
  assigned: (kind: AssignmentKind) => void;
  becameLeader: () => void;
  sessionExpired: () => void;
} {
  const registry = conventionalRegistry('pserver_master');
  const assignments = new Counter({
    name: 'pserver_master_assignments_total',
    help: 'Assignments committed while leading: an index to a spare, an index to its promoted replica, a spare made a replica.',
    labelNames: ['kind'],
    registers: [registry],
  });
  for (const kind of ['spare', 'promotion', 'replica'] as const) assignments.inc({ kind }, 0);
  const becameLeader = new Counter({
    name: 'pserver_master_became_leader_total',
    help: 'Times this replica took up leadership: over the replicas, the leader changes.',
    registers: [registry],
  });
  const sessionsExpired = new Counter({
    name: 'pserver_master_sessions_expired_total',
    help: 'Trainer sessions this replica ended while leading for want of a KeepAlive within the TTL.',
    registers: [registry],
  });
  new Gauge({
    name: 'pserver_master_leader',
    help: '1 while this replica leads, 0 while it follows.',
    registers: [registry],
    collect() {
      this.set(role() ? 1 : 0);
    },
  });
  // The sessions and the dataset are the leader's: on a follower these are absent.
  optionalGauge(
    registry,
    'pserver_master_trainers',
    'Trainers with a live session (leader only).',
    () => role()?.sessions.list().length,
  );
  new Gauge({
    name: 'pserver_master_shards',
    help: "The job's shards by state (leader only): serving, or not (unassigned, or recovering).",
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.reset();
      const view = role()?.view;
      if (!view) return;
      const serving = view.shards.filter((s) => s.serving).length;
      this.set({ state: 'serving' }, serving);
      this.set({ state: 'not_serving' }, view.shards.length - serving);
    },
  });
  new Gauge({
    name: 'pserver_master_replicas_in_sync',
    help: "Replicas in sync (promotable) by shard, against the job's replicas per shard (leader only).",
    labelNames: ['shard'],
    registers: [registry],
    collect() {
      this.reset();
      const view = role()?.view;
      if (!view || view.replicas === 0) return;
      for (const shard of view.shards)
        this.set({ shard: String(shard.index) }, shard.replicas.filter((r) => r.inSync).length);
    },
  });
  optionalGauge(
    registry,
    'pserver_master_replicas_desired',
    'Replicas the job keeps of each shard (leader only; absent when the job keeps none).',
    () => {
      const replicas = role()?.view.replicas;
      return replicas ? replicas : undefined;
    },
  );
  new Gauge({
    name: 'pserver_master_tasks',
    help: 'Tasks of the current pass by state: todo, pending, done, failed (leader only).',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.reset();
      const pass = role()?.dataset.passStatus();
      if (!pass) return;
      for (const state of ['todo', 'pending', 'done', 'failed'] as const)
        this.set({ state }, Number(pass[state]));
    },
  });
  optionalGauge(
    registry,
    'pserver_master_pass',
    'The current pass of the dataset (leader only, once a dataset is set).',
    () => {
      const pass = role()?.dataset.passStatus();
      return pass ? Number(pass.pass) : undefined;
    },
  );
  new Gauge({
    name: 'pserver_master_reshape',
    help: "A change of the initialized job's shard count under way, by phase (leader only): handing_back (a running job's primaries commit a final checkpoint and hand their shards back), restoring (the new count's indices restore their shares); 1 in the phase it is in.",
    labelNames: ['phase'],
    registers: [registry],
    collect() {
      this.reset();
      const leading = role();
      if (!leading) return;
      const { liveReshape, reshape } = leading.state;
      this.set({ phase: 'handing_back' }, liveReshape ? 1 : 0);
      this.set({ phase: 'restoring' }, reshape ? 1 : 0);
    },
  });
  return {
    registry,
    assigned: (kind) => assignments.inc({ kind }),
    becameLeader: () => becameLeader.inc(),
    sessionExpired: () => sessionsExpired.inc(),
  };
}
