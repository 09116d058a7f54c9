import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { LeaderRole } from './service/leader-role';

/**
 * The master's Prometheus registry: Node.js process metrics, the RPC metrics the server's
 * interceptor records, and, read at each scrape, leadership, live trainers and the current pass's
 * tasks by state (those only on the leader, which holds them).
 */
export function masterMetrics(role: () => LeaderRole | undefined): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
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
  return registry;
}
