"""SYNC and bounded staleness against in-memory shards: the trainer id option, the mode and the
step floor from the shards' statuses, reads numbered step 0, sample counts, push reports, the
zero-sample pushes that tell the shards a step is done, and the last step's pushes sent again to a
shard that failed over without them (PSERVER_RESEND_STEP)."""

import grpc
import numpy as np
import pytest

from fake_shards import FakeRpcError, fake_client
from pserver_client import (
    Client,
    ClientError,
    PserverError,
    PushReport,
    ShardPush,
    bucket_of_id,
    codes,
    connect,
    place_tensor,
    table_shards,
)
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


# --- SYNC failover: the last step's pushes, kept and sent again when a shard asks ---

#: The shard that failed over in these tests.
FAILED = 1


def on(client, shard, step=None, method=None):
    """The calls sent to `shard` (of `step`, of `method`), in order, as (method, step, request)."""
    return [
        (m, r.context.step, r)
        for m, s, r in client.calls.sent
        if s == shard and (step is None or r.context.step == step) and (method is None or m == method)
    ]


def trained(client, grads=None, **options):
    """`client` (SYNC, initializer) with "w" of LONG elements, one block on every shard, after a
    first step that pushed `grads` (ones by default) there; the calls sent so far are forgotten."""
    client._initializer = True
    client.init_params({"w": np.zeros(LONG, np.float32)}, {"sgd": {}, "learning_rate": {"base": 1}})
    grads = np.ones(LONG, np.float32) if grads is None else grads
    assert client.step(lambda ctx: ctx.send_grads({"w": grads}, **options)) is not None
    client.calls.sent.clear()
    return client


def step_1_push(client, shard):
    """The push step 1 sent to `shard` (the last one: a retry sends the same)."""
    return [r for m, s, r in client.calls.sent if m == "SendGrads" and s == shard and r.context.step == 1][-1]


def test_a_read_answered_resend_step_sends_the_kept_push_to_that_shard_then_reads(sync, caplog):
    sync._initializer = True
    sync.init_params({"w": np.zeros(LONG, np.float32)}, {"sgd": {}, "learning_rate": {"base": 1}})
    sync.pass_ = 4
    sync.step(lambda ctx: ctx.send_grads({"w": np.full(LONG, 0.5, np.float32)}, sample_count=3))
    first = step_1_push(sync, FAILED)
    sync.calls.sent.clear()
    sync.stale_shard(FAILED, 5)  # the shard failed over: a new epoch
    sync.pass_ = 5
    sync.calls.ask_resend("GetParams", FAILED, 2)

    with caplog.at_level("INFO", logger="pserver_client"):
        values = sync.step(lambda ctx: ctx.get_params(["w"]))["w"]

    assert values.shape == (LONG,)
    calls = on(sync, FAILED)
    assert [(m, step) for m, step, _ in calls[:3]] == [("GetParams", 2), ("SendGrads", 1), ("GetParams", 2)]
    resent = calls[1][2]
    assert (resent.context.trainer_id, getattr(resent.context, "pass"), resent.context.shard_epoch) == (2, 4, 5)
    assert list(resent.grads) == list(first.grads) and len(resent.grads) > 0
    assert (resent.HasField("sample_count"), resent.sample_count) == (True, 3)
    # Only the shard that asked gets the step again.
    assert [s for m, s, r in sync.calls.sent if r.context.step == 1] == [FAILED]
    assert "failed over without the last step" in caplog.text and "kept" in caplog.text


def test_the_kept_push_carries_the_rows_and_an_unset_sample_count_as_sent(sync):
    sync.init_params({}, tables=[{"name": "emb", "dim": 2, "buckets": 4}])
    ids = np.arange(40, dtype=np.int64)
    home = table_shards("emb", 4, SHARDS)[bucket_of_id(int(ids[0]), 4)]
    sync.step(lambda ctx: ctx.push_rows("emb", ids, np.ones((len(ids), 2), np.float32)))
    first = step_1_push(sync, home)
    assert len(first.sparse) == 1 and not first.HasField("sample_count")
    sync.calls.sent.clear()
    sync.calls.ask_resend("SendGrads", home, 2)

    sync.step(lambda ctx: None)

    resent = [r for m, step, r in on(sync, home, step=1)]
    assert len(resent) == 1
    assert list(resent[0].sparse) == list(first.sparse) and not resent[0].HasField("sample_count")


def test_a_skip_answered_resend_step_sends_the_kept_push_and_keeps_the_steps_report(sync):
    trained(sync, sample_count=2)
    sync.calls.ask_resend("SendGrads", FAILED, 2)
    # The re-send is answered first (dropped late: it does not matter), then the skip.
    sync.calls.push_replies[FAILED] += [
        reply(ps_pb2.PUSH_OUTCOME_DROPPED_LATE, 0),
        reply(ps_pb2.PUSH_OUTCOME_ACCUMULATED, 2),
    ]

    report = sync.step(lambda ctx: ctx.skip())

    assert ShardPush(FAILED, "PUSH_OUTCOME_ACCUMULATED", 2) in report.shards
    calls = on(sync, FAILED)
    assert [(m, step) for m, step, _ in calls] == [("SendGrads", 2), ("SendGrads", 1), ("SendGrads", 2)]
    resent, skip = calls[1][2], calls[2][2]
    assert (resent.sample_count, len(resent.grads) > 0, resent.context.trainer_id) == (2, True, 2)
    assert (skip.sample_count, len(skip.grads)) == (0, 0)
    # A dropped-late re-send moves no step: the next one follows.
    assert sync.step(lambda ctx: ctx.step) == 3


def test_the_kept_bytes_are_a_copy_of_the_trainers_array(sync):
    grads = np.ones(LONG, np.float32)
    trained(sync, grads)
    grads[:] = 99  # the trainer reuses its buffer for the next batch
    sync.calls.ask_resend("GetParams", FAILED, 2)

    sync.step(lambda ctx: ctx.get_params(["w"]))

    (resent,) = [r for m, step, r in on(sync, FAILED, step=1)]
    values = np.concatenate([np.frombuffer(g.content, np.float32) for g in resent.grads])
    assert len(values) > 0 and (values == 1).all()


@pytest.mark.parametrize("why", ["first step", "new trainer id", "a step skipped over"])
def test_without_a_kept_push_of_the_step_before_a_push_of_0_samples_is_sent(why):
    client = client_in("sync", version=[4, 4, 4] if why == "first step" else [0, 0, 0])
    try:
        if why != "first step":
            trained(client)
        if why == "new trainer id":
            client.trainer_id = 7  # the session expired: registered again
        if why == "a step skipped over":
            client.step_closed_without(2)  # the next step is 3: step 1's pushes are not step 2's
        client.pass_ = 6
        step = {"first step": 5, "new trainer id": 2, "a step skipped over": 3}[why]
        client.calls.ask_resend("SendGrads", FAILED, step)  # the step's skip

        assert client.step(lambda ctx: ctx.step) == step

        assert [m for m, s, r in on(client, FAILED, step=step - 1)] == ["SendGrads"]
        resent = [r for m, s, r in on(client, FAILED, step=step - 1)]
        context = resent[0].context
        assert (context.trainer_id, getattr(context, "pass")) == (7 if why == "new trainer id" else 2, 6)
        assert (resent[0].HasField("sample_count"), resent[0].sample_count, len(resent[0].grads)) == (True, 0, 0)
        assert len(resent[0].sparse) == 0
    finally:
        client.close()


def test_a_resend_that_fails_for_now_is_retried_like_any_push(sync):
    trained(sync)
    lost = iter([FakeRpcError(grpc.StatusCode.UNAVAILABLE, "connection lost")])
    sync.calls.fail = lambda method, shard, request: (
        next(lost, None) if (method, shard, request.context.step) == ("SendGrads", FAILED, 1) else None
    )
    sync.calls.ask_resend("GetParams", FAILED, 2)

    sync.step(lambda ctx: ctx.get_params(["w"]))

    assert [(m, step) for m, step, _ in on(sync, FAILED)][:4] == [
        ("GetParams", 2),
        ("SendGrads", 1),
        ("SendGrads", 1),
        ("GetParams", 2),
    ]


@pytest.mark.parametrize("again", ["the call", "the re-send"])
def test_a_second_resend_step_for_the_same_call_is_raised(sync, again):
    trained(sync)
    if again == "the call":
        sync.calls.ask_resend("GetParams", FAILED, 2, times=2)
    else:
        sync.calls.ask_resend("GetParams", FAILED, 2)
        sync.calls.ask_resend("SendGrads", FAILED, 1)

    with pytest.raises(PserverError) as caught:
        sync.step(lambda ctx: ctx.get_params(["w"]))

    assert (caught.value.status, caught.value.code) == ("FAILED_PRECONDITION", codes.PSERVER_RESEND_STEP)
    # Sent again once, never more.
    assert [m for m, step, _ in on(sync, FAILED, step=1)] == ["SendGrads"]
    expected = [("GetParams", 2), ("SendGrads", 1)] + ([("GetParams", 2)] if again == "the call" else [])
    assert [(m, step) for m, step, _ in on(sync, FAILED)] == expected


def test_reads_outside_a_step_do_not_replace_the_kept_pushes(sync):
    trained(sync, sample_count=5)
    kept = sync.last_step_pushes
    sync.get_params(["w"])
    sync.list_params()
    sync.init_params({"w": np.zeros(LONG, np.float32)})
    assert sync.last_step_pushes is kept
    sync.calls.ask_resend("GetParams", FAILED, 2)

    sync.step(lambda ctx: ctx.get_params(["w"]))

    (resent,) = [r for m, step, r in on(sync, FAILED, step=1)]
    assert (resent.sample_count, len(resent.grads) > 0) == (5, True)
    # The step went through: its pushes (the skip) are kept now.
    assert sync.last_step_pushes is not kept and sync.last_step_pushes.step == 2
    resend = sync.last_step_pushes.sent_to(FAILED, 2, 2, shard_count=SHARDS, tables=sync.table_directory)
    assert resend.sample_count == 0


def test_under_async_nothing_is_kept():
    client = fake_client(shards=SHARDS)
    try:
        client.init_params({"w": np.zeros(LONG, np.float32)})
        client.step(lambda ctx: ctx.send_grads({"w": np.ones(LONG, np.float32)}))
        kept = client.last_step_pushes
        tables = client.table_directory
        assert all(kept.sent_to(s, client.trainer_id, 1, shard_count=SHARDS, tables=tables) is None for s in range(SHARDS))
    finally:
        client.close()
