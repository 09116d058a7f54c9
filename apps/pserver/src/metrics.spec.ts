import type { GetShardStatusResponse } from '@pserver/proto';
import { pserverMetrics } from './metrics';

describe('pserverMetrics', () => {
  it('exposes rows and row counters per table from the status', async () => {
    const status: GetShardStatusResponse = {
      tables: [
        { name: 'emb', rows: 7, rowsCreated: 9, rowsRejected: 3, rowsEvicted: 2 },
        { name: 'other', rows: 0 },
      ],
    };
    const { registry } = pserverMetrics({ status: () => status, leaseValidUntil: () => undefined });
    const text = await registry.metrics();
    expect(text).toContain('pserver_table_rows{table="emb"} 7');
    expect(text).toContain('pserver_table_rows{table="other"} 0');
    expect(text).toContain('pserver_table_rows_created_total{table="emb"} 9');
    expect(text).toContain('pserver_table_rows_rejected_total{table="emb"} 3');
    expect(text).toContain('pserver_table_rows_evicted_total{table="emb"} 2');
  });
});
