import type { ClusterView__Output } from '@pserver/proto';
import { viewFromProto } from './view';

const clusterView = (consistency: ClusterView__Output['consistency']): ClusterView__Output => ({
  job: 'j',
  shardCount: 1,
  blockSize: 4,
  shards: [],
  revision: 3,
  initialized: true,
  replicas: 0,
  consistency,
  finished: false,
});

describe('viewFromProto', () => {
  it("carries the job's consistency mode; a master that does not say runs ASYNC", () => {
    const mode = (m: string) =>
      viewFromProto(clusterView({ mode: m as never, staleness: 0, replicasToAggregate: 0 }))
        .consistency;
    expect(mode('CONSISTENCY_MODE_SYNC')).toBe('sync');
    expect(mode('CONSISTENCY_MODE_BOUNDED_STALENESS')).toBe('ssp');
    expect(mode('CONSISTENCY_MODE_ASYNC')).toBe('async');
    expect(viewFromProto(clusterView(null)).consistency).toBe('async');
  });
});
