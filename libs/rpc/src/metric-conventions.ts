import { version } from '@pserver/config';
import {
  collectDefaultMetrics,
  Gauge,
  Registry,
  type MetricObjectWithValues,
  type MetricValue,
} from 'prom-client';

/**
 * prom-client's runtime gauges whose names end in `_total`, which Prometheus keeps for counters
 * (`promtool check metrics` refuses them). Each repeats the sum of a labelled gauge that stays:
 * `nodejs_active_handles{type}`, `nodejs_active_requests{type}`, `nodejs_active_resources{type}`.
 */
const misnamedRuntimeGauges = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/**
 * A process's registry, by the Prometheus naming conventions: the Node.js runtime's series but
 * the misnamed ones, and `<prefix>_build_info` (always 1; its labels say which build runs).
 */
export function conventionalRegistry(prefix: string): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  for (const name of misnamedRuntimeGauges) registry.removeSingleMetric(name);
  new Gauge({
    name: `${prefix}_build_info`,
    help: 'Always 1: the labels say which build runs (the version, the Node.js it runs on).',
    labelNames: ['version', 'node_version'],
    registers: [registry],
  }).set({ version, node_version: process.version }, 1);
  return registry;
}

/**
 * A gauge read at each scrape that is absent (no sample, only its HELP and TYPE) while it does
 * not apply — `read` answers undefined: a spare's shard, a follower's sessions — rather than NaN
 * or a made-up 0.
 */
export function optionalGauge(
  registry: Registry,
  name: string,
  help: string,
  read: () => number | undefined,
): void {
  registry.registerMetric(new OptionalGauge(name, help, read));
}

class OptionalGauge extends Gauge {
  constructor(
    private readonly metricName: string,
    private readonly metricHelp: string,
    private readonly read: () => number | undefined,
  ) {
    super({ name: metricName, help: metricHelp, registers: [] });
  }

  override get(): Promise<MetricObjectWithValues<MetricValue<string>>> {
    const value = this.read();
    return Promise.resolve({
      name: this.metricName,
      help: this.metricHelp,
      type: 'gauge',
      aggregator: 'sum',
      values: value === undefined ? [] : [{ value, labels: {} }],
    } as unknown as MetricObjectWithValues<MetricValue<string>>);
  }
}
