import { MasterService, maxShardCount } from './master-service';

describe('MasterService', () => {
  // A follower: no role, no leader known. What it answers shows whether a check came first.
  const follower = (): MasterService =>
    new MasterService({ address: () => '127.0.0.1:1', leaderAddress: async () => undefined });

  it.each([maxShardCount + 1, 2 ** 31, 2 ** 32 - 1])(
    'refuses a shard count of %d before anything else (the view and the reconciler walk every index)',
    async (shardCount) => {
      await expect(follower().setDesiredShards({ shardCount })).rejects.toMatchObject({
        code: 'MASTER_INVALID_ARGUMENT',
        message: `shardCount: must be at most ${maxShardCount}, got ${shardCount}`,
      });
    },
  );

  it('passes a shard count within the bound on to the leader', async () => {
    await expect(follower().setDesiredShards({ shardCount: maxShardCount })).rejects.toMatchObject({
      code: 'MASTER_NOT_LEADER',
    });
  });
});
