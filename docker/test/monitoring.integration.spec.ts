import { LocalCluster, metricsPage, stopAllProcesses, type AppProcess } from '@pserver/testing';
import { metricNames, monitoringExpressions } from './monitoring-files';

// Every metric the alert rules and the dashboard name is one a live pserver or master exposes
// (a series that does not apply yet is still declared: its HELP and TYPE lines).
afterAll(stopAllProcesses);

async function declaredNames(app: AppProcess): Promise<Set<string>> {
  const text = await metricsPage(app);
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

describe('the monitoring files against live metrics', () => {
  it('name only metrics the pserver and the master expose', async () => {
    const cluster = await LocalCluster.start({
      pservers: 1,
      spares: 0,
      masters: 1,
      leaseTtlSeconds: 2,
      extraPserverArgs: ['--metrics-port', '0'],
      extraMasterArgs: ['--metrics-port', '0'],
    });
    try {
      const exposed = new Set([
        ...(await declaredNames(cluster.serving().get(0)!.pserver)),
        ...(await declaredNames(cluster.masters[0]!)),
      ]);
      const unknown = monitoringExpressions().flatMap(({ where, expr }) =>
        metricNames(expr)
          .filter((name) => !exposed.has(name))
          .map((name) => `${where}: ${name}`),
      );
      expect(unknown).toEqual([]);
    } finally {
      await cluster.stop();
    }
  });
});
