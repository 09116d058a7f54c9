"""Dataset tasks: the iteration of one pass's tasks, with its reports, and reading a file task.

A task is reported finished when the loop asks for the next one, and failed when the loop ends
without doing so (the body raised, or broke out): the master then hands it to another trainer at
once instead of waiting for its timeout.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generator, Iterator, Optional

from . import codes
from ._proto.pserver.v1 import master_pb2
from .errors import ClientError, Error, PserverError
from .read_lines import read_lines

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("pserver_client")
Outcome = master_pb2.GetTaskOutcome


@dataclass
class FileRange:
    path: str
    start: int
    end: int


@dataclass
class RecordRange:
    start: int
    end: int


@dataclass
class DatasetTask:
    """A task handed to this trainer: a byte range of a line file, or a range of record indices."""

    id: int
    #: This hand-out's number: reports carry it, the master ignores those of older ones.
    dispatch: int
    pass_: int
    #: Lines that begin in [start, end) of the file (see read_records).
    file: Optional[FileRange] = None
    #: Records [start, end) of a generated dataset.
    records: Optional[RecordRange] = None
    #: Records read through read_records so far.
    consumed: int = 0


def read_records(task: DatasetTask) -> Iterator[str]:
    """The lines of a file task, each read by exactly one task of the pass (the input-split
    rule). Counts what it yields, for the task's report."""
    if task.file is None:
        raise ClientError(
            codes.CLIENT_NOT_A_FILE_TASK, f"task {task.id}: a range of generated records; use task.records.start and end"
        )
    for line in read_lines(task.file.path, task.file.start, task.file.end):
        task.consumed += 1
        yield line


def task_of(task: Any) -> DatasetTask:
    out = DatasetTask(id=task.id, dispatch=task.dispatch, pass_=getattr(task, "pass"))
    which = task.WhichOneof("range")
    if which == "file":
        out.file = FileRange(task.file.path, task.file.start, task.file.end)
    elif which == "records":
        out.records = RecordRange(task.records.start, task.records.end)
    return out


class TaskIterator:
    """`for task in client.tasks(pass_)`; also a context manager (`with client.tasks(p) as ts:`)
    that reports the task in hand as failed at once if the body raises, without relying on the
    generator being collected."""

    def __init__(self, client: Client, pass_: int) -> None:
        self._gen = _tasks(client, pass_)

    def __iter__(self) -> TaskIterator:
        return self

    def __next__(self) -> DatasetTask:
        return next(self._gen)

    def close(self) -> None:
        self._gen.close()

    def __enter__(self) -> TaskIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def new_request_id() -> str:
    """128 random bits in hex: unique per trainer without coordination."""
    return secrets.token_hex(16)


def _tasks(client: Client, pass_: int) -> Generator[DatasetTask, None, None]:
    master = client._master
    if master is None:
        raise ClientError(codes.CLIENT_NO_MASTER, "tasks: datasets need a master; connect with master=[...]")
    expired = 0
    # One id per task asked for, kept until a task comes: a GetTask whose reply was lost (the
    # master died after committing the hand-out) and that is sent again gets that same task,
    # instead of leaving it pending under this live trainer until its timeout.
    request_id = new_request_id()
    while True:
        try:
            reply = master.get_task(client.trainer_id, pass_, request_id)
        except PserverError as err:
            # The session ended (a long pause): the keep-alive thread registers again.
            expired += 1
            if err.code != codes.MASTER_SESSION_EXPIRED or expired > 20:
                raise
            client._sleep(0.25)
            continue
        if reply.outcome == Outcome.GET_TASK_OUTCOME_PASS_OVER:
            return
        if reply.outcome != Outcome.GET_TASK_OUTCOME_TASK or not reply.HasField("task"):
            # PASS_NOT_STARTED, NO_TASK_AVAILABLE, NO_DATASET: the master says when to ask again.
            # Under SYNC and SSP an idle trainer takes an empty step (a zero-sample contribution)
            # meanwhile, so that no step of the others waits for it.
            if client.view.consistency != "async":
                client.step(lambda ctx: None)
            client._sleep((reply.retry_after_ms or 500) / 1000)
            continue
        task = task_of(reply.task)
        request_id = new_request_id()
        finished = False
        try:
            yield task
            finished = True
        finally:
            records = task.consumed or (task.records.end - task.records.start if task.records else 0)
            if finished:
                master.task_finished(client.trainer_id, task, records)
            else:
                try:
                    master.task_failed(client.trainer_id, task, "the trainer stopped before finishing the task")
                except Error as err:
                    log.debug("could not report task %d failed: %s", task.id, err)
