import { consistencyFromStored, describeConsistency, parseConsistency } from './consistency';

describe('job consistency', () => {
  it('stores a SYNC job with its failover policy, and reads one stored before the policy existed as rerun', () => {
    const stored = JSON.stringify(parseConsistency('sync', 2, 'continue'));
    expect(consistencyFromStored(stored)).toEqual({
      mode: 'sync',
      replicasToAggregate: 2,
      failover: 'continue',
    });
    expect(consistencyFromStored('{"mode":"sync","replicasToAggregate":0}')).toEqual({
      mode: 'sync',
      replicasToAggregate: 0,
      failover: 'rerun',
    });
    expect(describeConsistency(parseConsistency('sync', 0, 'continue'))).toBe('sync (continue)');
    expect(describeConsistency(parseConsistency('sync'))).toBe('sync');
  });

  it('refuses a policy it does not know, from a flag or from etcd', () => {
    expect(() => parseConsistency('sync', 0, 'maybe')).toThrow(
      "--sync-failover: expected rerun or continue, got 'maybe'",
    );
    expect(() => consistencyFromStored('{"mode":"sync","failover":"maybe"}')).toThrow(
      'config/consistency: unknown failover',
    );
  });
});
