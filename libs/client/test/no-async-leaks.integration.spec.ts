import path from 'node:path';
import {
  bundleScript,
  LocalCluster,
  spawnNode,
  stopAllProcesses,
  waitFor,
  type ManagedProcess,
} from '@pserver/testing';

afterAll(() => stopAllProcesses());

const sessionTtlSeconds = 2;
const reRegistered = 'the session had ended; registered again under a new id';

describe('a trainer under --unhandled-rejections=strict', () => {
  let cluster: LocalCluster;
  let trainer: ManagedProcess;

  beforeAll(async () => {
    cluster = await LocalCluster.start({
      pservers: 1,
      masters: 1,
      leaseTtlSeconds: 2,
      sessionTtlSeconds,
    });
  });

  afterAll(() => cluster?.stop());

  const steps = (): number => trainer.jsonLines().filter((e) => e.event === 'step').length;
  const stepsAfter = async (count: number, description: string): Promise<void> => {
    await waitFor(() => steps() >= count + 5 || undefined, { timeoutMs: 30_000, description });
  };

  it('keeps stepping through a stop past its session TTL and a master outage, registering again once', async () => {
    const fixture = bundleScript(path.join(__dirname, 'fixtures', 'steady-trainer.ts'));
    trainer = spawnNode(fixture, [cluster.masterAddresses.join(','), '50'], {
      name: 'steady-trainer',
      env: { NODE_OPTIONS: '--unhandled-rejections=strict' },
    });
    await stepsAfter(0, 'the trainer steps');

    // Stopped past its session TTL: the master ends the session. The master then dies, and the
    // trainer wakes while it is down: every keep-alive fails until the master is back on its
    // port and answers that the session has ended; the trainer registers again — once, however
    // many keep-alive intervals the outage lasted.
    const registrations = (): number =>
      trainer.jsonLines().filter((e) => e.msg === reRegistered).length;
    const master = cluster.masters[0]!;
    trainer.signal('SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, 2.5 * sessionTtlSeconds * 1_000));
    await master.process.kill();
    trainer.signal('SIGCONT');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await cluster.restartMaster(master);
    await waitFor(() => registrations() > 0 || undefined, {
      timeoutMs: 30_000,
      description: 'the trainer registers again with the restarted master',
    });
    await stepsAfter(steps(), 'steps after the master came back');
    // A few more keep-alive intervals: none registers again.
    await new Promise((resolve) => setTimeout(resolve, sessionTtlSeconds * 1_000));
    expect(registrations()).toBe(1);

    trainer.signal('SIGUSR2');
    const exit = await trainer.exited;
    if (exit.code !== 0) throw trainer.failure(`exited with ${JSON.stringify(exit)}`);
    const done = trainer.jsonLines().find((e) => e.event === 'done')!;
    expect(done.errors).toBe(0);
  }, 120_000);
});
