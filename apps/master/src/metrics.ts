import { version } from '@pserver/config';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { LeaderRole } from './service/leader-role';

/** What the leader did to the shards: each kind of assignment it committed. */
export type AssignmentKind = 'spare' | 'promotion' | 'replica';

/**
 * The master's Prometheus registry: Node.js process metrics, the RPC metrics the server's
 * interceptor records, the assignments this process committed while it led (a failover is a
 * `spare` or a `promotion` after the job's first assignments), and, read at each scrape,
 * leadership, live trainers and the current pass's tasks by state (those only on the leader,
 * which holds them).
 */
export function masterMetrics(role: () => LeaderRole | undefined): {
  registry: Registry;
  assigned: (kind: AssignmentKind) => void;
} {
  const registry = new Registry();
  const assignments = new Counter({
    name: 'pserver_master_assignments_total',
    help: 'Assignments committed while leading: an index to a spare, an index to its promoted replica, a spare made a replica.',
    labelNames: ['kind'],
    registers: [registry],
  });
  for (const kind of ['spare', 'promotion', 'replica'] as const) assignments.inc({ kind }, 0);
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'pserver_master_build_info',
    help: 'Always 1: the labels say which build runs (the version, the Node.js it runs on).',
    labelNames: ['version', 'node_version'],
    registers: [registry],
  }).set({ version, node_version: process.version }, 1);
  new Gauge({
    name: 'pserver_master_leader',
    help: '1 while this replica leads, 0 while it follows.',
    registers: [registry],
    collect() {
      this.set(role() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'pserver_master_trainers',
    help: 'Trainers with a live session (NaN on a follower).',
    registers: [registry],
    collect() {
      // NaN on a follower, which does not hold the sessions.
      this.set(role()?.sessions.list().length ?? NaN);
    },
  });
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
  new Gauge({
    name: 'pserver_master_pass',
    help: 'The current pass of the dataset (NaN on a follower or before a dataset).',
    registers: [registry],
    collect() {
      const pass = role()?.dataset.passStatus();
      this.set(pass ? Number(pass.pass) : NaN);
    },
  });
  return { registry, assigned: (kind) => assignments.inc({ kind }) };
}
