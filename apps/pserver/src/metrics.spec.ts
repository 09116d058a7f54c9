import fs from 'node:fs';
import path from 'node:path';
import type { GetShardStatusResponse } from '@pserver/proto';
import { pserverMetrics } from './metrics';

describe('pserverMetrics', () => {
  it('says which build runs: the project version and the Node.js', async () => {
    const { registry } = pserverMetrics({
      status: () => undefined,
      leaseValidUntil: () => undefined,
      replication: () => undefined,
      parked: () => undefined,
    });
    const { version } = JSON.parse(
      fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'),
    ) as { version: string };
    const text = await registry.metrics();
    expect(text).toContain(
      `pserver_build_info{version="${version}",node_version="${process.version}"} 1`,
    );
    // A spare: what does not apply is absent (HELP and TYPE only), never NaN.
    expect(text).not.toContain('NaN');
    expect(text).toContain('# TYPE pserver_shard_index gauge');
    expect(text).not.toMatch(/^pserver_shard_index /m);
    expect(text).toMatch(/^pserver_serving 0$/m);
    // No runtime gauge named like a counter (promtool's check).
    expect(text).not.toMatch(/^nodejs_active_\w+_total/m);
  });

  it('exposes rows and row counters per table from the status', async () => {
    const status: GetShardStatusResponse = {
      tables: [
        { name: 'emb', rows: 7, rowsCreated: 9, rowsRejected: 3, rowsEvicted: 2 },
        { name: 'other', rows: 0 },
      ],
    };
    const { registry } = pserverMetrics({
      status: () => status,
      leaseValidUntil: () => undefined,
      replication: () => undefined,
      parked: () => undefined,
    });
    const text = await registry.metrics();
    expect(text).toContain('pserver_table_rows{table="emb"} 7');
    expect(text).toContain('pserver_table_rows{table="other"} 0');
    expect(text).toContain('pserver_table_rows_created_total{table="emb"} 9');
    expect(text).toContain('pserver_table_rows_rejected_total{table="emb"} 3');
    expect(text).toContain('pserver_table_rows_evicted_total{table="emb"} 2');
  });

  it("exposes a primary's replicas: applied pushes, each one's lag, how many are in sync", async () => {
    const { registry } = pserverMetrics({
      status: () => undefined,
      leaseValidUntil: () => undefined,
      replication: () => ({
        role: 'primary',
        appliedSeq: 120,
        replicas: [
          { member: 'ps-3', acked: 118, inSync: true },
          { member: 'ps-4', acked: 40, inSync: false },
        ],
      }),
      parked: () => undefined,
    });
    const text = await registry.metrics();
    expect(text).toContain('pserver_replication_applied_seq 120');
    expect(text).toContain('pserver_replica_lag_pushes{replica="ps-3"} 2');
    expect(text).toContain('pserver_replica_lag_pushes{replica="ps-4"} 80');
    expect(text).toContain('pserver_replicas_in_sync 1');
  });

  it('exposes the consistency clocks, the calls parked for them and the contributions a restore lost', async () => {
    const { registry, lostContributions } = pserverMetrics({
      status: () => ({ version: 12, minClock: 11 }),
      leaseValidUntil: () => undefined,
      replication: () => undefined,
      parked: () => ({ calls: 3, waitedSeconds: 1.5 }),
    });
    lostContributions.inc(4);
    const text = await registry.metrics();
    expect(text).toContain('pserver_version 12');
    expect(text).toContain('pserver_min_clock 11');
    expect(text).toContain('pserver_parked_calls 3');
    expect(text).toContain('pserver_parked_seconds_total 1.5');
    expect(text).toContain('pserver_sync_lost_contributions_total 4');
  });
});
