import type { DatasetStore, StoredDataset } from '@pserver/coordination';
import { silentLogger } from '@pserver/logging';
import type { GetTaskResponse } from '@pserver/proto';
import { DatasetService, maxRequestIdLength } from './dataset-service';

type Store = Pick<DatasetStore, 'load' | 'create' | 'write'>;

/**
 * The dataset's keys as etcd would hold them (JSON text, read back as a new leader would), with
 * an optional gate that holds writes in flight.
 */
class MemoryStore implements Store {
  spec: string | undefined;
  fileGroups: string[] = [];
  readonly tasks = new Map<number, string>();
  pass = 0;
  gate: Promise<void> | undefined;

  async load(): Promise<StoredDataset | undefined> {
    if (this.spec === undefined) return undefined;
    return {
      spec: JSON.parse(this.spec),
      fileGroups: this.fileGroups.map((g) => JSON.parse(g) as unknown[]),
      tasks: new Map([...this.tasks].map(([id, value]) => [id, JSON.parse(value)])),
      pass: this.pass,
    };
  }

  async create(spec: object, fileGroups: object[][]): Promise<boolean> {
    if (this.spec !== undefined) return false;
    this.fileGroups = fileGroups.map((g) => JSON.stringify(g));
    this.spec = JSON.stringify(spec);
    return true;
  }

  async write(tasks: [id: number, state: object][], pass?: number): Promise<void> {
    await this.gate;
    for (const [id, state] of tasks) this.tasks.set(id, JSON.stringify(state));
    if (pass !== undefined) this.pass = pass;
  }

  pending(): unknown[] {
    return [...this.tasks.values()]
      .map((v) => JSON.parse(v) as { status: string })
      .filter((r) => r.status === 'pending');
  }
}

const trainer = 4;
const alive = { requireAlive: (): void => undefined };
// The default task timeout (5 min): a pass that ends in this test did not wait for it.
const dataset = { source: 'records' as const, records: { records: 30, taskRecords: 10 } };

function leader(store: Store, now: () => number): DatasetService {
  return new DatasetService(store, alive, silentLogger, now);
}

function taskOf(reply: GetTaskResponse): { id: number; dispatch: number } {
  expect(reply.outcome).toBe('GET_TASK_OUTCOME_TASK');
  return { id: Number(reply.task!.id), dispatch: Number(reply.task!.dispatch) };
}

describe('DatasetService: a retried GetTask', () => {
  let clock = 1_000_000;
  const now = (): number => clock;

  it('is answered again with the same task by a new leader built from the stored records, and the pass ends', async () => {
    const store = new MemoryStore();
    const first = leader(store, now);
    await first.setDataset(dataset);
    // The first leader hands out a task and commits it; the reply is lost with the leader.
    const lost = await first.getTask(trainer, 0, 'request-1');
    clock += 7;

    const second = leader(store, now);
    await second.load();
    const again = await second.getTask(trainer, 0, 'request-1');
    expect(again.task).toEqual({ ...lost.task, timeoutMs: Number(lost.task!.timeoutMs) - 7 });
    expect(second.passStatus()).toMatchObject({ pending: 1, todo: 2 });

    // The trainer goes on with it and the others; nothing waits for a timeout.
    const tasks = [taskOf(again)];
    for (const requestId of ['request-2', 'request-3'])
      tasks.push(taskOf(await second.getTask(trainer, 0, requestId)));
    expect(new Set(tasks.map((t) => t.id)).size).toBe(3);
    expect((await second.getTask(trainer, 0, 'request-4')).outcome).toBe(
      'GET_TASK_OUTCOME_NO_TASK_AVAILABLE',
    );
    for (const task of tasks) await second.taskFinished(trainer, task.id, task.dispatch, 10);
    expect(second.passStatus()).toMatchObject({ pass: 1, pending: 0, done: 0 });
    expect(store.pass).toBe(1);
    expect(store.pending()).toEqual([]);
  });

  it('is answered again by the leader in memory, also while the first write is in flight', async () => {
    const store = new MemoryStore();
    const service = leader(store, now);
    await service.setDataset(dataset);
    let open!: () => void;
    store.gate = new Promise((resolve) => (open = resolve));
    const firstCall = service.getTask(trainer, 0, 'request-1');
    const retry = service.getTask(trainer, 0, 'request-1');
    open();
    const [a, b] = await Promise.all([firstCall, retry]);
    expect(b).toEqual(a);
    expect(service.passStatus()).toMatchObject({ pending: 1, todo: 2 });
    expect(store.pending()).toEqual([
      expect.objectContaining({ trainer, requestId: 'request-1', dispatch: 1 }),
    ]);
  });

  it('takes a new task for a new request id, for another trainer, or without an id', async () => {
    const store = new MemoryStore();
    const service = leader(store, now);
    await service.setDataset({ ...dataset, records: { records: 40, taskRecords: 10 } });
    const ids = [
      await service.getTask(trainer, 0, 'request-1'),
      await service.getTask(trainer, 0, 'request-2'),
      await service.getTask(trainer + 1, 0, 'request-1'),
      await service.getTask(trainer, 0),
    ].map((reply) => taskOf(reply).id);
    expect(new Set(ids).size).toBe(4);
  });

  it('takes a new task when the one handed out for the id is no longer pending', async () => {
    const store = new MemoryStore();
    const service = leader(store, now);
    await service.setDataset(dataset);
    const first = taskOf(await service.getTask(trainer, 0, 'request-1'));
    await service.taskFailed(trainer, first.id, first.dispatch, 'disk full');
    const next = taskOf(await service.getTask(trainer, 0, 'request-1'));
    expect(next.id).not.toBe(first.id);
  });

  it(`refuses a request id over ${maxRequestIdLength} characters`, async () => {
    const service = leader(new MemoryStore(), now);
    await service.setDataset(dataset);
    await expect(
      service.getTask(trainer, 0, 'x'.repeat(maxRequestIdLength + 1)),
    ).rejects.toMatchObject({ code: 'MASTER_INVALID_ARGUMENT' });
    expect(service.passStatus()).toMatchObject({ pending: 0, todo: 3 });
  });
});
