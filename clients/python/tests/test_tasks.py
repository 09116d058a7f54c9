"""The task loop without a cluster: which GetTask request ids it sends."""

import re

from pserver_client._proto.pserver.v1 import master_pb2
from pserver_client.tasks import TaskIterator
from pserver_client.view import View

Outcome = master_pb2.GetTaskOutcome


class ScriptedMaster:
    """Answers GetTask from a script and records the request ids it was sent."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.request_ids = []

    def get_task(self, trainer_id, pass_, request_id):
        self.request_ids.append(request_id)
        return self.replies.pop(0)

    def task_finished(self, trainer_id, task, records):
        pass

    def task_failed(self, trainer_id, task, reason):
        pass


class Client:
    trainer_id = 7

    def __init__(self, master, consistency="async"):
        self._master = master
        self.view = View(shard_count=1, block_size=4, consistency=consistency)
        self.seen = []

    def _sleep(self, seconds):
        pass

    def step(self, fn):
        self.seen.append("idle step")


def task(id_):
    return master_pb2.GetTaskResponse(
        outcome=Outcome.GET_TASK_OUTCOME_TASK,
        task=master_pb2.Task(id=id_, dispatch=1, records=master_pb2.RecordRange(start=0, end=1)),
    )


def test_one_request_id_until_a_task_comes_then_a_new_one():
    wait = master_pb2.GetTaskResponse(outcome=Outcome.GET_TASK_OUTCOME_NO_TASK_AVAILABLE, retry_after_ms=1)
    over = master_pb2.GetTaskResponse(outcome=Outcome.GET_TASK_OUTCOME_PASS_OVER)
    master = ScriptedMaster([wait, wait, task(3), task(5), over])
    assert [t.id for t in TaskIterator(Client(master), 0)] == [3, 5]
    a, b, c, d, e = master.request_ids
    assert re.fullmatch(r"[0-9a-f]{32}", a)
    assert [b, c] == [a, a]
    assert len({a, d, e}) == 3


def test_an_idle_trainer_takes_empty_steps_under_sync_and_ssp_only():
    wait = master_pb2.GetTaskResponse(outcome=Outcome.GET_TASK_OUTCOME_NO_TASK_AVAILABLE, retry_after_ms=1)
    over = master_pb2.GetTaskResponse(outcome=Outcome.GET_TASK_OUTCOME_PASS_OVER)
    for consistency, idle_steps in [("async", 0), ("sync", 2), ("ssp", 2)]:
        client = Client(ScriptedMaster([task(1), wait, wait, task(2), over]), consistency)
        for t in TaskIterator(client, 0):
            client.seen.append(f"task {t.id}")
        assert client.seen == ["task 1"] + ["idle step"] * idle_steps + ["task 2"]
