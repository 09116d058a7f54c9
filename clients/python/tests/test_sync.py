"""SYNC and bounded staleness against in-memory shards: the trainer id option, the mode and the
step floor from the shards' statuses, reads numbered step 0, sample counts, push reports, and the
zero-sample pushes that tell the shards a step is done."""

import numpy as np
import pytest

from fake_shards import fake_client
from pserver_client import Client, ClientError, PushReport, ShardPush, codes, connect, place_tensor
from pserver_client._proto.pserver.v1 import consistency_pb2
from pserver_client._proto.pserver.v1 import context_pb2, master_pb2
from pserver_client._proto.pserver.v1 import parameter_server_pb2 as ps_pb2
from pserver_client._proto.pserver.v1 import tensor_pb2
from pserver_client.shard_calls import ShardCalls
from pserver_client.view import View

SHARDS = 3
#: Elements of a tensor whose blocks (of 4) land on every one of the SHARDS.
LONG = 40
MODES = {
    "async": consistency_pb2.CONSISTENCY_MODE_ASYNC,
    "sync": consistency_pb2.CONSISTENCY_MODE_SYNC,
    "ssp": consistency_pb2.CONSISTENCY_MODE_BOUNDED_STALENESS,
}


def client_in(mode, shards=SHARDS, **status):
    """A fake client whose shards report `mode` (and `status`'s fields, a list per field, one
    value per shard) and which has read their statuses as a refresh does."""
    client = fake_client(shards=shards, trainer_id=2)
    for i, s in enumerate(client.calls.statuses):
        s.consistency.mode = MODES[mode]
        for field, values in status.items():
            setattr(s, field, values[i])
    Client.refresh_view(client)
    client.calls.sent.clear()
    return client


@pytest.fixture
def sync():
    c = client_in("sync")
    yield c
    c.close()


def pushes(client):
    return [(shard, request) for method, shard, request in client.calls.sent if method == "SendGrads"]


def reply(outcome, version):
    return ps_pb2.SendGradsResponse(outcome=outcome, version=version)


@pytest.mark.parametrize("bad", [0, -3, 1.5, "2", True])
def test_a_trainer_id_that_is_not_a_whole_number_of_at_least_1_is_invalid_options(bad):
    with pytest.raises(ClientError) as caught:
        connect(pservers=["127.0.0.1:1"], trainer_id=bad)
    assert caught.value.code == codes.CLIENT_INVALID_OPTIONS
    assert "trainer_id" in str(caught.value) and repr(bad) in str(caught.value)


def test_the_trainer_id_given_stamps_every_call_and_the_status_requests():
    client = fake_client(shards=2, trainer_id=np.int64(3))
    try:
        assert client.trainer_id == 3 and type(client.trainer_id) is int
        Client.refresh_view(client)
        client.step(lambda ctx: None)
        stamped = [(m, r.context.trainer_id) for m, _, r in client.calls.sent]
        assert stamped == [("GetShardStatus", 3), ("GetShardStatus", 3)]
        assert client.step(lambda ctx: ctx.request_context(1).trainer_id) == 3
    finally:
        client.close()


@pytest.mark.parametrize("mode", ["async", "sync", "ssp"])
def test_the_consistency_mode_comes_from_the_shards_statuses(mode):
    client = client_in(mode)
    try:
        assert client.view.consistency == mode
    finally:
        client.close()


def test_shards_that_disagree_on_the_mode_are_invalid_options():
    client = fake_client(shards=SHARDS)
    try:
        client.calls.statuses[1].consistency.mode = consistency_pb2.CONSISTENCY_MODE_SYNC
        with pytest.raises(ClientError) as caught:
            Client.refresh_view(client)
        assert caught.value.code == codes.CLIENT_INVALID_OPTIONS
        assert "different consistency modes (async, sync)" in str(caught.value)
        assert client.view.consistency == "async"
    finally:
        client.close()


def test_a_moved_epoch_keeps_the_mode(sync):
    sync.stale_shard(1, 5)
    assert (sync.view.shards[1].epoch, sync.view.consistency) == (5, "sync")


@pytest.mark.parametrize("mode", ["async", "sync", "ssp"])
def test_a_cluster_view_carries_the_jobs_mode(mode):
    view = View.from_proto(
        master_pb2.ClusterView(shard_count=1, revision=3, consistency=consistency_pb2.Consistency(mode=MODES[mode]))
    )
    assert (view.revision, view.consistency) == (3, mode)
    assert View.from_proto(master_pb2.ClusterView()).consistency == "async"  # a master that does not say


def test_sync_goes_on_at_the_open_step_of_the_shard_furthest_behind():
    client = client_in("sync", version=[6, 4, 9])
    try:
        assert [client.step(lambda ctx: ctx.step) for _ in range(2)] == [5, 6]
    finally:
        client.close()


def test_ssp_goes_on_past_this_trainers_last_step_on_any_shard():
    client = client_in("ssp", trainer_last_step=[3, 11, 0])
    try:
        assert client.step(lambda ctx: ctx.step) == 12
    finally:
        client.close()


def test_ssp_joins_a_running_job_at_the_slowest_members_clock():
    client = client_in("ssp", trainer_last_step=[0, 0, 0], min_clock=[7, 9, 8])
    try:
        assert client.step(lambda ctx: ctx.step) == 10
    finally:
        client.close()


def test_the_floor_needs_every_shards_status_and_never_moves_a_trainer_back(sync):
    sync.calls.statuses[0].version = 20
    sync.calls.fail = lambda method, shard, request: RuntimeError("down") if shard == 1 else None
    Client.refresh_view(sync)
    assert not sync.view.complete()
    assert sync.next_step_number() == 1  # shard 1 did not answer: no floor from a partial picture
    sync.calls.fail = lambda method, shard, request: None
    for s in sync.calls.statuses:
        s.version = 2
    Client.refresh_view(sync)
    assert sync.next_step_number() == 3
    assert sync.next_step_number() == 4
    Client.refresh_view(sync)  # the shards still say 2: the trainer keeps its own count
    assert sync.next_step_number() == 5


def test_reads_and_init_are_step_0_and_take_no_step_number(sync):
    sync._initializer = True
    sync.init_params({"w": np.arange(6, dtype=np.float32)}, {"sgd": {}, "learning_rate": {"base": 1}})
    assert np.array_equal(sync.get_params(["w"])["w"], np.arange(6, dtype=np.float32))
    assert set(sync.list_params()) == {"w"}
    sync.table_directory = type(sync.table_directory)()
    assert sync.tables() == {}
    steps = {(m, r.context.step) for m, _, r in sync.calls.sent}
    assert steps == {("InitParam", 0), ("FinishInitParams", 0), ("GetParams", 0), ("ListParams", 0)}
    assert pushes(sync) == []  # a read is no step of the trainer: nothing to skip
    assert sync.step(lambda ctx: ctx.step) == 1


def test_the_sample_count_goes_on_the_request_and_the_report_comes_back(sync):
    sync.init_params({"w": np.zeros(LONG, np.float32)})
    assert {b.shard for b in place_tensor("w", LONG, 4, SHARDS)} == {0, 1, 2}
    replies = [(ps_pb2.PUSH_OUTCOME_ACCUMULATED, 3), (ps_pb2.PUSH_OUTCOME_DUPLICATE, 4), (ps_pb2.PUSH_OUTCOME_APPLIED, 5)]
    for shard, (outcome, version) in enumerate(replies):
        sync.calls.push_replies[shard].append(reply(outcome, version))
    report = sync.step(lambda ctx: ctx.send_grads({"w": np.ones(LONG, np.float32)}, sample_count=np.uint8(7)))
    assert report == PushReport(
        [
            ShardPush(0, "PUSH_OUTCOME_ACCUMULATED", 3),
            ShardPush(1, "PUSH_OUTCOME_DUPLICATE", 4),
            ShardPush(2, "PUSH_OUTCOME_APPLIED", 5),
        ]
    )
    assert sorted((shard, r.sample_count, len(r.grads) > 0) for shard, r in pushes(sync)) == [
        (0, 7, True),
        (1, 7, True),
        (2, 7, True),
    ]


def test_without_a_sample_count_the_field_is_unset(sync):
    sync.init_params({"w": np.zeros(LONG, np.float32)})
    sync.step(lambda ctx: ctx.send_grads({"w": np.ones(LONG, np.float32)}))
    assert [r.HasField("sample_count") for _, r in pushes(sync)] == [False] * SHARDS


@pytest.mark.parametrize("bad", [0, -1, 2.0, True])
def test_a_sample_count_below_1_or_not_whole_is_refused_before_anything_is_sent(sync, bad):
    sync.init_params({"w": np.zeros(10, np.float32)})
    with pytest.raises(ClientError) as caught:
        sync.step(lambda ctx: ctx.send_grads({"w": np.ones(10, np.float32)}, sample_count=bad))
    assert caught.value.code == codes.CLIENT_INVALID_OPTIONS and "skip()" in str(caught.value)
    assert pushes(sync) == []


def test_a_streamed_push_carries_the_sample_count_on_its_first_chunk_only():
    calls = ShardCalls(max_message_bytes=1 << 20, stream_chunk_bytes=256 << 10)
    grad = tensor_pb2.Tensor(name="g", element_type=tensor_pb2.ELEMENT_TYPE_FLOAT32, content=b"\0" * (600 << 10))
    chunks = list(calls.pieces(context_pb2.RequestContext(trainer_id=2, step=4), [grad], (), 5))
    assert len(chunks) == 3
    assert [c.HasField("sample_count") for c in chunks] == [True, False, False]
    assert chunks[0].sample_count == 5 and chunks[0].context.step == 4
    unset = list(calls.pieces(None, [grad]))
    assert not any(c.HasField("sample_count") for c in unset)


def test_a_push_dropped_late_moves_the_next_step_past_the_steps_every_shard_closed(sync):
    sync.init_params({"w": np.zeros(2, np.float32)})
    home = place_tensor("w", 2, 4, SHARDS)[0].shard
    rest = [s for s in range(SHARDS) if s != home]
    sync.calls.push_replies[home].append(reply(ps_pb2.PUSH_OUTCOME_DROPPED_LATE, 8))
    for shard, version in zip(rest, (9, 8)):
        sync.calls.push_replies[shard].append(reply(ps_pb2.PUSH_OUTCOME_ACCUMULATED, version))
    report = sync.step(lambda ctx: ctx.send_grads({"w": np.ones(2, np.float32)}))
    assert report.shards == [ShardPush(home, "PUSH_OUTCOME_DROPPED_LATE", 8)]
    assert sync.step(lambda ctx: ctx.step) == 9


def test_a_late_answer_never_moves_the_next_step_past_one_another_shard_waits_for(sync):
    # A shard restored behind the job answers late; the others still wait for step 2.
    sync.init_params({"w": np.zeros(2, np.float32)})
    home = place_tensor("w", 2, 4, SHARDS)[0].shard
    rest = [s for s in range(SHARDS) if s != home]
    sync.calls.push_replies[home].append(reply(ps_pb2.PUSH_OUTCOME_DROPPED_LATE, 8))
    for shard in rest:
        sync.calls.push_replies[shard].append(reply(ps_pb2.PUSH_OUTCOME_ACCUMULATED, 0))
    sync.step(lambda ctx: ctx.send_grads({"w": np.ones(2, np.float32)}))
    assert sync.step(lambda ctx: ctx.step) == 2


def test_under_sync_the_step_tells_the_shards_it_did_not_push_to_that_it_is_done(sync):
    sync.init_params({"w": np.zeros(2, np.float32)})
    home = place_tensor("w", 2, 4, SHARDS)[0].shard
    sync.step(lambda ctx: ctx.send_grads({"w": np.ones(2, np.float32)}, sample_count=2))
    sent = [(shard, r.sample_count, [g.name for g in r.grads], len(r.sparse)) for shard, r in pushes(sync)]
    rest = [s for s in range(SHARDS) if s != home]
    # The skip goes out after the push, to the other shards in parallel.
    assert sent[0] == (home, 2, ["w"], 0)
    assert sorted(sent[1:]) == [(s, 0, [], 0) for s in rest]
    assert {r.context.step for _, r in pushes(sync)} == {1}


def test_a_step_without_data_sends_0_samples_to_every_shard():
    client = client_in("ssp")
    try:
        client.step(lambda ctx: None)
        sent = [(shard, r.HasField("sample_count"), r.sample_count, len(r.grads)) for shard, r in pushes(client)]
        assert sorted(sent) == [(s, True, 0, 0) for s in range(SHARDS)]
    finally:
        client.close()


def test_skip_reports_the_shards_it_told_and_the_end_of_the_step_sends_nothing_more(sync):
    sync.init_params({"w": np.zeros(2, np.float32)})
    home = place_tensor("w", 2, 4, SHARDS)[0].shard
    rest = [s for s in range(SHARDS) if s != home]
    for s in rest:
        sync.calls.push_replies[s].append(reply(ps_pb2.PUSH_OUTCOME_ACCUMULATED, 6))

    def fn(ctx):
        ctx.send_grads({"w": np.ones(2, np.float32)})
        return ctx.skip()

    report = sync.step(fn)
    assert report.shards == [ShardPush(s, "PUSH_OUTCOME_ACCUMULATED", 6) for s in rest]
    assert len(pushes(sync)) == SHARDS


def test_skip_with_rows_staged_and_not_sent_is_an_error(sync):
    sync.init_params({}, tables=[{"name": "emb", "dim": 2, "buckets": 4}])

    def fn(ctx):
        ctx.push_rows("emb", [1, 2], np.ones((2, 2), np.float32))
        ctx.skip()

    with pytest.raises(ClientError) as caught:
        sync.step(fn)
    assert caught.value.code == codes.CLIENT_STEP_FAILED and "push_rows" in str(caught.value)
    assert pushes(sync) == []


def test_under_async_a_step_sends_no_extra_pushes():
    client = fake_client(shards=SHARDS)
    try:
        client.init_params({"w": np.zeros(2, np.float32)})
        home = place_tensor("w", 2, 4, SHARDS)[0].shard
        client.step(lambda ctx: ctx.send_grads({"w": np.ones(2, np.float32)}))
        client.step(lambda ctx: None)
        assert [(shard, r.HasField("sample_count")) for shard, r in pushes(client)] == [(home, False)]
    finally:
        client.close()
