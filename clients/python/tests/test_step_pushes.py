"""A SYNC step's kept pushes, sent again after the job's shard count changed: every block and row
goes to the shard that holds it now, once, with the step's sample count."""

import numpy as np
import pytest

from pserver_client import place_tensor
from pserver_client._proto.pserver.v1 import table_pb2, tensor_pb2
from pserver_client.sparse_rows import StagedRows, group_by_shard, merge_rows, sparse_grads_by_shard
from pserver_client.step_pushes import SentPush, StepPushes
from pserver_client.tables import TableDirectory, TableLayout

TRAINER, STEP, PASS = 4, 9, 1
EMB = TableLayout("emb", 3, 64)
IDS = np.arange(50, dtype=np.int64) * 7919 - 100
ROW_GRADS = (np.arange(len(IDS) * EMB.dim, dtype=np.float32) / 8).reshape(len(IDS), EMB.dim)


@pytest.fixture
def tables():
    directory = TableDirectory()
    directory.declare(EMB)
    return directory


def pushes_at(shard_count, sample_count, tables):
    """The step's pushes as the client places them among `shard_count` shards."""
    out = {}

    def at(shard):
        return out.setdefault(shard, SentPush([], [], sample_count))

    values = np.arange(2500, dtype=np.float32)
    for block in place_tensor("w", len(values), 256, shard_count):
        at(block.shard).dense.append(
            tensor_pb2.Tensor(
                name=block.name,
                element_type=tensor_pb2.ELEMENT_TYPE_FLOAT32,
                content=values[block.start : block.end].tobytes(),
            )
        )
    merged = merge_rows(EMB.dim, [StagedRows(IDS, ROW_GRADS, None)])
    groups = group_by_shard(merged.ids.ids, EMB, tables.shards_of(EMB, shard_count))
    for shard, grad in sparse_grads_by_shard(EMB.name, merged, groups).items():
        at(shard).sparse.append(grad)
    # Every shard hears of the step; one with nothing of it gets a zero-sample push.
    for shard in range(shard_count):
        out.setdefault(shard, SentPush([], [], 0))
    return out


def kept(shard_count, tables):
    pushes = StepPushes(TRAINER, STEP, PASS, shard_count)
    for shard, push in pushes_at(shard_count, 7, tables).items():
        pushes.record(shard, push)
    return pushes


def block_names(push):
    return sorted(tensor.name for tensor in push.dense)


def rows_of(grads):
    rows = {}
    for grad in grads:
        ids = np.frombuffer(grad.ids, dtype="<i8")
        values = np.frombuffer(grad.grads, dtype="<f4").reshape(len(ids), EMB.dim)
        rows.update((int(id), values[k].tolist()) for k, id in enumerate(ids))
    return rows


def test_under_the_count_the_step_ran_at_the_push_as_sent(tables):
    pushes = kept(3, tables)
    expected = pushes_at(3, 7, tables)
    for shard in range(3):
        push = pushes.sent_to(shard, TRAINER, STEP, shard_count=3, tables=tables)
        assert block_names(push) == block_names(expected[shard])
        assert rows_of(push.sparse) == rows_of(expected[shard].sparse)


@pytest.mark.parametrize("before, now", [(3, 4), (3, 2), (2, 5)])
def test_every_block_and_row_is_placed_anew_once_the_count_moved(tables, before, now):
    pushes = kept(before, tables)
    expected = pushes_at(now, 7, tables)
    every_row = {}
    for shard in range(now):
        push = pushes.sent_to(shard, TRAINER, STEP, shard_count=now, tables=tables)
        # What the step would have sent to the shard had it run at the new count.
        assert block_names(push) == block_names(expected[shard])
        assert rows_of(push.sparse) == rows_of(expected[shard].sparse)
        carries = bool(push.dense or push.sparse)
        assert push.sample_count == (7 if carries else 0)
        every_row.update(rows_of(push.sparse))
    assert len(every_row) == len(np.unique(IDS))


def test_the_admission_counts_go_with_their_rows(tables):
    counted = StepPushes(TRAINER, STEP, PASS, 2)
    grad = table_pb2.SparseGrad(
        table=EMB.name,
        ids=np.array([5, 6], dtype="<i8").tobytes(),
        grads=np.ones(6, dtype="<f4").tobytes(),
        counts=np.array([3, 4], dtype="<u4").tobytes(),
    )
    counted.record(0, SentPush([], [grad], 1))
    counts = {}
    for shard in range(3):
        push = counted.sent_to(shard, TRAINER, STEP, shard_count=3, tables=tables)
        assert push.sample_count == (1 if push.sparse else 0)
        for moved in push.sparse:
            ids = np.frombuffer(moved.ids, dtype="<i8").tolist()
            counts.update(zip(ids, np.frombuffer(moved.counts, dtype="<u4").tolist()))
    assert counts == {5: 3, 6: 4}


def test_nothing_for_another_trainer_or_step(tables):
    pushes = kept(3, tables)
    assert pushes.sent_to(0, TRAINER + 1, STEP, shard_count=4, tables=tables) is None
    assert pushes.sent_to(0, TRAINER, STEP - 1, shard_count=4, tables=tables) is None
