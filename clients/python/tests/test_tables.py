"""Sparse tables against in-memory shards: specs at init, lookups (distinct ids, one GetRows per
shard, split under half the message limit, scattered back), row pushes staged into the step's
one push per shard, re-runs, attaching, and errors."""

import struct

import numpy as np
import pytest

from pserver_client import ClientError, PserverError, bucket_of_id, codes, place_tensor, table_shards
from pserver_client._proto.pserver.v1 import context_pb2, table_pb2
from pserver_client.errors import ERROR_CODE_KEY, SHARD_EPOCH_KEY
from pserver_client.shard_calls import ShardCalls
from fake_shards import FakeRpcError, FakeShards, fake_client

import grpc

SHARDS = 3
EMB = {"name": "emb", "dim": 2, "buckets": 16, "optimizer": {"sgd": {}, "learning_rate": {"base": 1}}}


@pytest.fixture
def client():
    c = fake_client(shards=SHARDS)
    yield c
    c.close()


def with_table(client, spec=EMB):
    """The table on every fake shard and in the client, as init_params leaves them."""
    client._initializer = True
    client.init_params({}, tables=[spec])
    client.calls.sent.clear()


def sent(client, method):
    return [(shard, request) for m, shard, request in client.calls.sent if m == method]


def ids_of(raw):
    return [v for (v,) in struct.iter_unpack("<q", raw)]


def shard_of(id_, spec=EMB, shards=SHARDS):
    return table_shards(spec["name"], spec["buckets"], shards)[bucket_of_id(id_, spec["buckets"])]


def spread_ids(count, start=0):
    """`count` ids from `start` on, and check they reach every shard."""
    ids = list(range(start, start + count))
    assert {shard_of(i) for i in ids} == set(range(SHARDS))
    return ids


# --- init ---------------------------------------------------------------------------------------


def test_init_params_creates_each_table_on_every_shard_before_the_shards_finish_init(client):
    client._initializer = True
    camel = {"name": "gated", "dim": 4, "admission": {"counting": {"minCount": 2}}}
    client.init_params({"w": np.zeros(3, np.float32)}, {"sgd": {}, "learning_rate": {"base": 1}}, tables=[EMB, camel])
    methods = [(m, shard) for m, shard, _ in client.calls.sent]
    inits = [(shard, r.spec) for shard, r in sent(client, "InitTable")]
    assert sorted((shard, spec.name) for shard, spec in inits) == sorted(
        (s, n) for s in range(SHARDS) for n in ("emb", "gated")
    )
    last_init_table = max(i for i, (m, _) in enumerate(methods) if m == "InitTable")
    first_finish = min(i for i, (m, _) in enumerate(methods) if m == "FinishInitParams")
    assert last_init_table < first_finish
    assert len(sent(client, "FinishInitParams")) == SHARDS
    by_name = {spec.name: spec for _, spec in inits}
    # Unset buckets are filled in (every trainer routes with the same count); the rest as given.
    assert (by_name["emb"].buckets, by_name["gated"].buckets) == (16, 4096)
    assert by_name["gated"].admission.counting.min_count == 2
    assert by_name["emb"].optimizer.learning_rate.base == 1
    tables = client.tables()
    assert {n: (t.dim, t.buckets) for n, t in tables.items()} == {"emb": (2, 16), "gated": (4, 4096)}
    assert sent(client, "ListParams") == []  # known from init_params: nothing listed


def test_a_spec_proto_is_taken_as_it_is():
    c = fake_client(shards=2)
    try:
        c._initializer = True
        c.init_params({}, tables=[table_pb2.TableSpec(name="t", dim=3, buckets=2)])
        assert {r.spec.buckets for _, r in sent(c, "InitTable")} == {2}
    finally:
        c.close()


@pytest.mark.parametrize(
    "spec,code",
    [
        ({"name": "a@b", "dim": 2}, codes.CLIENT_UNKNOWN_TENSOR),
        ({"name": "w", "dim": 2}, codes.CLIENT_UNKNOWN_TENSOR),  # a tensor's name
        ({"name": "t", "dim": 0}, codes.CLIENT_SHAPE_MISMATCH),
        ({"name": "t", "dim": 4097}, codes.CLIENT_SHAPE_MISMATCH),
        ({"name": "t", "dim": 2, "buckets": 3}, codes.CLIENT_SHAPE_MISMATCH),
    ],
)
def test_a_bad_table_spec_is_refused_before_anything_is_sent(client, spec, code):
    client._initializer = True
    with pytest.raises(ClientError) as caught:
        client.init_params({"w": np.zeros(2, np.float32)}, None, tables=[spec])
    assert caught.value.code == code
    assert client.calls.sent == []


# --- lookup -------------------------------------------------------------------------------------


def test_lookup_reads_each_distinct_id_once_one_call_per_shard_and_scatters_back(client):
    with_table(client)
    batch = spread_ids(12) + [5, 0, 5, -1, 2**63 - 1, -(2**63)]
    client.calls.rows[shard_of(5)]["emb"] = {5: [50.0, 51.0]}
    got = client.step(lambda ctx: ctx.lookup("emb", np.array(batch, dtype=np.int64)))
    assert got.dtype == np.float32 and got.shape == (len(batch), 2)
    expected = [[50.0, 51.0] if i == 5 else FakeShards.missing_row("emb", i, 2) for i in batch]
    assert got.tolist() == np.array(expected, dtype=np.float32).tolist()
    calls = sent(client, "GetRows")
    assert sorted(shard for shard, _ in calls) == list(range(SHARDS))  # one per shard
    read = [i for _, r in calls for i in ids_of(r.ids)]
    assert sorted(read) == sorted(set(batch))  # each distinct id once
    for _, r in calls:  # in order of first appearance within a shard
        shard_ids = ids_of(r.ids)
        assert shard_ids == sorted(shard_ids, key=batch.index)


def test_lookup_takes_a_list_of_ints_and_an_empty_batch(client):
    with_table(client)
    assert client.lookup("emb", [3, 3]).tolist() == [FakeShards.missing_row("emb", 3, 2)] * 2
    empty = client.lookup("emb", [])
    assert empty.shape == (0, 2) and empty.dtype == np.float32
    assert len(sent(client, "GetRows")) == 1


@pytest.mark.parametrize(
    "ids",
    [np.zeros((2, 2), np.int64), np.array([1.5]), [2**64], ["a"], np.array([2**63], dtype=np.uint64)],
)
def test_ids_that_are_not_int64_are_refused(client, ids):
    with_table(client)
    with pytest.raises(ClientError) as caught:
        client.lookup("emb", ids)
    assert caught.value.code == codes.CLIENT_SHAPE_MISMATCH
    assert sent(client, "GetRows") == []


def test_a_shards_lookup_is_split_so_replies_stay_under_half_the_message_limit():
    c = fake_client(shards=1, max_message_bytes=64 << 10)
    try:
        spec = dict(EMB, dim=64)
        with_table(c, spec)
        per_call = c.calls.rows_per_call(64)
        assert per_call * (64 * 4 + 1) <= (64 << 10) // 2
        batch = np.arange(3 * per_call + 7, dtype=np.int64)[::-1].copy()
        got = c.lookup("emb", batch)
        calls = sent(c, "GetRows")
        assert [len(r.ids) // 8 for _, r in calls] == [per_call] * 3 + [7]
        assert [i for _, r in calls for i in ids_of(r.ids)] == batch.tolist()
        assert np.array_equal(got, np.array([FakeShards.missing_row("emb", int(i), 64) for i in batch], np.float32))
    finally:
        c.close()


# --- push_rows ----------------------------------------------------------------------------------


def sparse_of(request, table="emb"):
    (grad,) = [s for s in request.sparse if s.table == table]
    rows = np.frombuffer(grad.grads, dtype="<f4").reshape(len(grad.ids) // 8, -1)
    counts = np.frombuffer(grad.counts, dtype="<u4").tolist() if grad.counts else None
    return ids_of(grad.ids), rows, counts


def test_rows_go_in_the_same_send_grads_as_the_dense_gradients_of_each_shard(client):
    client._initializer = True
    client.init_params({"w": np.zeros(40, np.float32)}, {"sgd": {}, "learning_rate": {"base": 1}}, tables=[EMB])
    assert {b.shard for b in place_tensor("w", 40, 4, SHARDS)} == set(range(SHARDS))
    client.calls.sent.clear()
    batch = spread_ids(9)

    def fn(ctx):
        ctx.push_rows("emb", batch, np.ones((len(batch), 2), np.float32))
        ctx.send_grads({"w": np.ones(40, np.float32)})

    client.step(fn)
    pushes = sent(client, "SendGrads")
    assert sorted(shard for shard, _ in pushes) == list(range(SHARDS))  # one push per shard
    for shard, request in pushes:
        ids, rows, counts = sparse_of(request)
        assert ids == [i for i in batch if shard_of(i) == shard] and counts is None
        assert rows.tolist() == [[1.0, 1.0]] * len(ids)
        assert len(request.grads) > 0  # its dense blocks ride along


def test_rows_alone_go_out_when_the_step_returns_without_dense_gradients(client):
    with_table(client)
    client.step(lambda ctx: ctx.push_rows("emb", [7], [0.5, -0.5]))
    ((shard, request),) = sent(client, "SendGrads")
    assert shard == shard_of(7) and list(request.grads) == []
    ids, rows, _ = sparse_of(request)
    assert ids == [7] and rows.tolist() == [[0.5, -0.5]]


def test_duplicates_within_and_across_calls_are_summed_in_order_of_first_appearance_in_float32(client):
    with_table(client)
    big, one = np.float32(1e8), np.float32(1)
    # id 3: 1e8 + 1 + 1 − 1e8 in float32 is 0 (each 1 is lost); in binary64 it would be 2.
    first = np.array([[big, 1], [1, 2], [one, 3]], np.float32)
    second = np.array([[one, 4], [-big, 5]], np.float32)

    def fn(ctx):
        ctx.push_rows("emb", [3, 9, 3], first, counts=[2, 1, 1])
        ctx.push_rows("emb", [3, 3], second)

    client.step(fn)
    merged = {}
    for _, request in sent(client, "SendGrads"):
        ids, rows, counts = sparse_of(request)
        merged.update({i: (rows[k].tolist(), counts[k]) for k, i in enumerate(ids)})
    expected3 = np.float32(np.float32(np.float32(big + one) + one) - big)
    assert expected3 == 0
    # id 3: counts 2 + 1 given, then 1 + 1 for the call without counts.
    assert merged == {3: ([float(expected3), 13.0], 5), 9: ([1.0, 2.0], 1)}
    if shard_of(3) == shard_of(9):  # one SparseGrad per table and shard, in first-appearance order
        (request,) = [r for _, r in sent(client, "SendGrads")]
        assert sparse_of(request)[0] == [3, 9]


def test_push_rows_copies_its_arrays(client):
    with_table(client)
    ids, grads = np.array([4], np.int64), np.array([[1, 2]], np.float32)

    def fn(ctx):
        ctx.push_rows("emb", ids, grads)
        ids[0], grads[0, 0] = 99, 100

    client.step(fn)
    ((_, request),) = sent(client, "SendGrads")
    got_ids, rows, _ = sparse_of(request)
    assert got_ids == [4] and rows.tolist() == [[1.0, 2.0]]


@pytest.mark.parametrize(
    "ids,grads,counts",
    [
        ([1, 2], np.ones(3, np.float32), None),  # 2 ids × dim 2 is 4 values
        ([1, 2], np.ones((2, 3), np.float32), None),
        ([1, 2], np.ones((4, 1), np.float32), None),
        ([1, 2], np.ones(4, np.float64), None),  # not float32
        ([1, 2], np.ones(4, np.float32), [1]),  # one count per id
        ([1, 2], np.ones(4, np.float32), [1, -1]),
    ],
)
def test_push_rows_checks_lengths_at_once(client, ids, grads, counts):
    with_table(client)
    reached = []

    def fn(ctx):
        ctx.push_rows("emb", ids, grads, counts)
        reached.append(1)

    with pytest.raises(ClientError) as caught:
        client.step(fn)
    assert caught.value.code == codes.CLIENT_SHAPE_MISMATCH
    assert reached == [] and sent(client, "SendGrads") == []


def test_rows_given_after_the_steps_push_are_an_error(client):
    client._initializer = True
    client.init_params({"w": np.zeros(2, np.float32)}, {"sgd": {}, "learning_rate": {"base": 1}}, tables=[EMB])

    def fn(ctx):
        ctx.send_grads({"w": np.ones(2, np.float32)})
        ctx.push_rows("emb", [1], [1, 1])

    with pytest.raises(ClientError) as caught:
        client.step(fn)
    assert caught.value.code == codes.CLIENT_STEP_FAILED


def test_a_re_run_sends_the_staged_rows_again_with_the_same_step(client):
    with_table(client)
    batch = spread_ids(9)
    target = shard_of(batch[0])
    failed = []

    def fail(method, shard, request):
        if method == "SendGrads" and shard == target and not failed:
            failed.append(1)
            return FakeRpcError(grpc.StatusCode.ABORTED, "stale", [(ERROR_CODE_KEY, "PSERVER_STALE_EPOCH"), (SHARD_EPOCH_KEY, "2")])
        return None

    client.calls.fail = fail
    runs = []

    def fn(ctx):
        runs.append(ctx.step)
        ctx.push_rows("emb", batch, np.full((len(batch), 2), 0.25, np.float32))

    client.step(fn)
    assert len(runs) == 2 and runs[0] == runs[1]
    to_target = [r for shard, r in sent(client, "SendGrads") if shard == target]
    assert len(to_target) == 2
    assert to_target[0].sparse == to_target[1].sparse
    assert to_target[0].context.step == to_target[1].context.step
    assert to_target[1].context.shard_epoch == 2


def test_table_full_is_not_retried(client):
    with_table(client)
    client.calls.fail = lambda method, shard, request: (
        FakeRpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, "full", [(ERROR_CODE_KEY, "PSERVER_TABLE_FULL")])
        if method == "SendGrads"
        else None
    )
    with pytest.raises(PserverError) as caught:
        client.step(lambda ctx: ctx.push_rows("emb", [1], [1, 1]))
    assert (caught.value.status, caught.value.code) == ("RESOURCE_EXHAUSTED", "PSERVER_TABLE_FULL")
    assert len(sent(client, "SendGrads")) == 1


# --- attaching ----------------------------------------------------------------------------------


def test_a_client_that_did_not_init_learns_tables_from_list_params(client):
    for shard in range(SHARDS):
        client.calls.tables[shard]["emb"] = table_pb2.TableSpec(name="emb", dim=2, buckets=16)
    assert client.lookup("emb", [11]).tolist() == [FakeShards.missing_row("emb", 11, 2)]
    assert len(sent(client, "ListParams")) == SHARDS
    client.step(lambda ctx: ctx.push_rows("emb", [11], [1, 1]))
    assert len(sent(client, "ListParams")) == SHARDS  # known since
    assert {n: (t.dim, t.buckets) for n, t in client.tables().items()} == {"emb": (2, 16)}


def test_tables_lists_when_the_client_knows_none(client):
    client.calls.tables[0]["late"] = table_pb2.TableSpec(name="late", dim=8, buckets=4)
    assert {n: (t.dim, t.buckets) for n, t in client.tables().items()} == {"late": (8, 4)}


def test_a_table_no_shard_holds_is_unknown(client):
    with pytest.raises(ClientError) as caught:
        client.lookup("nope", [1])
    assert caught.value.code == codes.CLIENT_UNKNOWN_TENSOR
    with pytest.raises(ClientError) as caught:
        client.step(lambda ctx: ctx.push_rows("nope", [1], [1.0]))
    assert caught.value.code == codes.CLIENT_UNKNOWN_TENSOR


# --- a push above the message limit ---------------------------------------------------------


def test_a_push_above_the_limit_streams_each_tables_rows_in_slices_of_whole_rows():
    calls = ShardCalls(max_message_bytes=4096, stream_chunk_bytes=100)
    used = {}

    class Method:
        def __init__(self, name):
            self.name = name

        def future(self, request, timeout):
            used[self.name] = list(request) if self.name == "SendGradsStream" else request

    class Stub:
        SendGrads, SendGradsStream = Method("SendGrads"), Method("SendGradsStream")

    calls.stub = lambda address: Stub()
    small = table_pb2.SparseGrad(table="emb", ids=np.arange(2, dtype="<i8").tobytes(), grads=bytes(16))
    calls.send_grads("x:1", None, [], 1.0, [small])
    assert list(used) == ["SendGrads"] and list(used["SendGrads"].sparse) == [small]

    ids, rows, counts = np.arange(200, dtype="<i8"), np.arange(400, dtype="<f4"), np.arange(200, dtype="<u4")
    grad = table_pb2.SparseGrad(table="emb", ids=ids.tobytes(), grads=rows.tobytes(), counts=counts.tobytes())
    context = context_pb2.RequestContext(trainer_id=3, step=4, shard_epoch=5)
    calls.send_grads("x:1", context, [], 1.0, [grad])
    chunks = used["SendGradsStream"]
    assert chunks[0].context == context and not any(c.HasField("context") for c in chunks[1:])
    slices = [s for c in chunks for s in c.sparse]
    assert len(slices) > 1 and {s.table for s in slices} == {"emb"}
    per_row = 8 + 8 + 4  # each slice whole rows: ids, their rows and counts together
    assert all(len(s.ids) // 8 * per_row <= 100 and len(s.grads) == len(s.ids) for s in slices)
    assert b"".join(s.ids for s in slices) == grad.ids
    assert b"".join(s.grads for s in slices) == grad.grads
    assert b"".join(s.counts for s in slices) == grad.counts
