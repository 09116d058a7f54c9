import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { kubernetesObjects } from './deployment-files';
import { metricNames, monitoringDir, monitoringExpressions, podMonitors } from './monitoring-files';

// The alert rules, the dashboard and the PodMonitors of docker/monitoring, offline. That every
// metric they name exists is checked against live pages (monitoring.integration.spec.ts).
describe('docker/monitoring', () => {
  it('holds alert rules that promtool check rules accepts', () => {
    const check = spawnSync(
      'promtool',
      ['check', 'rules', path.join(monitoringDir, 'alerts.yaml')],
      {
        encoding: 'utf8',
      },
    );
    expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' });
    expect(check.stdout).toContain('SUCCESS: 8 rules found');
  });

  it('alerts on a shard not serving, no leader, stale checkpoints, low lease margins and replication', () => {
    const alerts = monitoringExpressions()
      .filter(({ where }) => where.startsWith('alert '))
      .map(({ where }) => where.slice('alert '.length));
    expect(alerts).toEqual(
      expect.arrayContaining([
        'PserverShardNotServing',
        'PserverNoLeader',
        'PserverCheckpointStale',
        'PserverLeaseMarginLow',
        'PserverReplicaLagging',
        'PserverReplicasNotInSync',
      ]),
    );
  });

  it('has a dashboard whose every panel queries this project’s series', () => {
    const panels = monitoringExpressions().filter(({ where }) => where.startsWith('panel '));
    expect(panels.length).toBeGreaterThanOrEqual(12);
    for (const { where, expr } of panels)
      expect([where, metricNames(expr).length > 0]).toEqual([where, true]);
  });

  it('scrapes the pods the base runs, on ports their containers name', () => {
    const pods = kubernetesObjects()
      .map(({ object }) => object)
      .filter((o) => o.kind === 'Job' && o.metadata.name !== 'linear-regression');
    const monitors = podMonitors();
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(['master', 'pserver']);
    for (const monitor of monitors) {
      const pod = pods.find(
        (d) =>
          d.spec.template.metadata.labels['app.kubernetes.io/name'] ===
          monitor.spec.selector.matchLabels['app.kubernetes.io/name'],
      )!;
      const ports = pod.spec.template.spec.containers.flatMap((c: { ports: { name: string }[] }) =>
        c.ports.map((p) => p.name),
      );
      for (const endpoint of monitor.spec.podMetricsEndpoints)
        expect(ports).toContain(endpoint.port);
    }
  });
});
