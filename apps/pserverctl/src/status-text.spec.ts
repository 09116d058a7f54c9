import type { JobStatus, MoveStatus, ShardStatus } from './job-status';
import { statusText } from './status-text';

describe('statusText', () => {
  it('shows the job, the masters, a row per shard and the trainers, and says when it is degraded', () => {
    const status: JobStatus = {
      job: 'ctr',
      masters: [
        { address: '10.0.0.1:8200', role: 'leader' },
        { address: '10.0.0.2:8200', role: 'unreachable', error: 'connection refused' },
      ],
      leader: '10.0.0.1:8200',
      consistency: 'sync',
      replicas: 1,
      initialized: true,
      shards: [
        {
          index: 0,
          state: 'serving',
          member: 'ps-a',
          address: '10.0.1.1:8100',
          epoch: 7,
          checkpointAgeSeconds: 12.4,
          version: 40,
          replicas: [{ member: 'ps-c', address: '10.0.1.3:8100', inSync: true, lagPushes: 2 }],
        },
        {
          index: 1,
          state: 'recovering',
          member: 'ps-d',
          address: '10.0.1.4:8100',
          epoch: 9,
          replicas: [],
          error: 'PSERVER_NOT_SERVING',
        },
      ],
      spares: [{ member: 'ps-e', address: '10.0.1.5:8100' }],
      trainers: [{ id: 3, name: 'worker-0', registeredUnixMs: 0, pendingTasks: 1 }],
      pass: { pass: 0, todo: 5, pending: 1, done: 2, failed: 0 },
      healthy: false,
    };
    expect(statusText(status).split('\n')).toEqual([
      'job ctr · sync · replicas 1 · initialized · DEGRADED',
      'masters: 10.0.0.1:8200 leader, 10.0.0.2:8200 unreachable (connection refused)',
      'shard  state       member  address        epoch  checkpoint  version  replicas',
      '0      serving     ps-a    10.0.1.1:8100  7      12 s ago    40       ps-c (in sync, lag 2)',
      '1      recovering  ps-d    10.0.1.4:8100  9      -           -        -                      PSERVER_NOT_SERVING',
      'spares: ps-e 10.0.1.5:8100',
      'trainers: 3 worker-0 (1 tasks)',
      'pass 0: 5 todo, 1 pending, 2 done, 0 failed',
      '',
    ]);
  });

  it('shows a pending reshape under the job line', () => {
    const text = statusText({
      job: 'ctr',
      masters: [{ address: '10.0.0.1:8200', role: 'leader' }],
      initialized: true,
      consistency: 'async',
      replicas: 0,
      shards: [],
      spares: [],
      trainers: [],
      reshape: { from: 4, to: 2, sources: [0, 1, 3], restored: [0] },
      healthy: false,
    });
    expect(text.split('\n').slice(0, 3)).toEqual([
      'job ctr · async · replicas 0 · initialized · DEGRADED',
      'reshape 4 → 2 pending: restored 0; waiting for 1 (from the checkpoints of old indices 0, 1, 3)',
      'masters: 10.0.0.1:8200 leader',
    ]);
  });

  it('shows each receiver of a live move under the shards: its copy, and its lag once loaded', () => {
    const shard = (index: number, moves: MoveStatus[]): ShardStatus => ({
      index,
      state: 'serving',
      member: `ps-${index}`,
      address: `10.0.1.${index}:8100`,
      epoch: 3,
      replicas: [],
      moves,
    });
    const move = { member: 'ps-2', index: 2, shardCount: 3 };
    const text = statusText({
      job: 'ctr',
      masters: [{ address: '10.0.0.1:8200', role: 'leader' }],
      initialized: true,
      consistency: 'async',
      replicas: 0,
      shards: [
        shard(0, [
          { ...move, copyBytes: 3 * 2 ** 20, sentBytes: 2 ** 20, state: 'copying', lagPushes: 9 },
        ]),
        shard(1, [
          { ...move, copyBytes: 2 ** 21, sentBytes: 2 ** 19, state: 'catching up', lagPushes: 4 },
        ]),
      ],
      spares: [],
      trainers: [],
      healthy: true,
    });
    expect(text.split('\n').slice(5, 8)).toEqual([
      'live moves, copied while the old shards serve:',
      '  shard 0 → index 2 of 3: ps-2, 1.0 MiB of 3.0 MiB sent, copying (lag 9 pushes)',
      '  shard 1 → index 2 of 3: ps-2, 512 KiB of 2.0 MiB sent, catching up (lag 4 pushes)',
    ]);
  });

  it('says so when no master answers as the leader', () => {
    const text = statusText({
      job: '',
      masters: [{ address: '10.0.0.1:8200', role: 'follower' }],
      shards: [],
      spares: [],
      trainers: [],
      healthy: false,
    });
    expect(text).toBe(
      'no master leads the job (or none answered)\nmasters: 10.0.0.1:8200 follower\n',
    );
  });

  it('says FINISHED for a finished job', () => {
    const text = statusText({
      job: 'ctr',
      masters: [{ address: '10.0.0.1:8200', role: 'leader' }],
      consistency: 'async',
      replicas: 0,
      initialized: true,
      finished: true,
      shards: [],
      spares: [],
      trainers: [],
      healthy: true,
    });
    expect(text.split('\n')[0]).toBe('job ctr · async · replicas 0 · initialized · FINISHED');
  });
});
