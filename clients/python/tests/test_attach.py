"""A process that never initialized the model lists it from the shards and reads it by name; reads
of any size are split into calls below the message limit."""

import grpc
import numpy as np
import pytest

from fake_shards import FakeRpcError, fake_client
from pserver_client import ClientError, ParamInfo, codes, place_tensor
from pserver_client._proto.pserver.v1 import optimizer_pb2, parameter_server_pb2 as ps_pb2, tensor_pb2
from pserver_client.listing import assemble

F32, F64 = tensor_pb2.ELEMENT_TYPE_FLOAT32, tensor_pb2.ELEMENT_TYPE_FLOAT64


def store(client, name, values, optimizer=None, shape=None):
    """Puts a tensor on the fake shards as a pserver holds it: its blocks where placement puts them."""
    view = client.view
    flat = np.asarray(values).reshape(-1)
    et = F32 if flat.dtype == np.float32 else F64
    for block in place_tensor(name, flat.size, view.block_size, view.shard_count):
        client.calls.params[block.shard][block.name] = tensor_pb2.Tensor(
            name=block.name,
            element_type=et,
            shape=np.shape(values) if shape is None else shape,
            content=flat[block.start : block.end].astype(flat.dtype.newbyteorder("<")).tobytes(),
        )
        if optimizer is not None:
            client.calls.optimizers[block.shard][block.name] = optimizer


@pytest.fixture
def client():
    c = fake_client(shards=2, block_size=4)
    yield c
    c.close()


def test_list_params_assembles_the_model_from_every_shard(client):
    sgd = optimizer_pb2.OptimizerConfig(sgd=optimizer_pb2.Sgd(), learning_rate=optimizer_pb2.LearningRate(base=0.5))
    store(client, "attach.w", np.arange(12, dtype=np.float32).reshape(3, 4), sgd)
    store(client, "attach.b", np.array([0.5, 1.5, 2.5, 3.5, 4.5]), sgd)
    store(client, "steps", np.zeros(2, np.float32))
    model = client.list_params()
    assert model == {
        "attach.b": ParamInfo("ELEMENT_TYPE_FLOAT64", (5,), 5, {"sgd": {}, "learning_rate": {"base": 0.5}}),
        "attach.w": ParamInfo("ELEMENT_TYPE_FLOAT32", (3, 4), 12, {"sgd": {}, "learning_rate": {"base": 0.5}}),
        "steps": ParamInfo("ELEMENT_TYPE_FLOAT32", (2,), 2, None),
    }
    assert sorted(s for m, s, _ in client.calls.sent if m == "ListParams") == [0, 1]


def test_get_params_of_a_tensor_never_declared_lists_the_model_first(client):
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    store(client, "w", w)
    got = client.get_params(["w"])["w"]
    assert got.shape == (3, 4) and np.array_equal(got, w)
    assert [m for m, _, _ in client.calls.sent][:2] == ["ListParams", "ListParams"]
    client.calls.sent.clear()
    client.get_params(["w"])  # known now: no listing again
    assert {m for m, _, _ in client.calls.sent} == {"GetParams"}
    with pytest.raises(ClientError) as caught:
        client.get_params(["never-declared"])
    assert caught.value.code == codes.CLIENT_UNKNOWN_TENSOR


def spec(name, elements, shape=(), et=F32):
    return ps_pb2.ParamSpec(name=name, element_type=et, shape=shape, elements=elements)


def test_assemble_checks_the_blocks_against_the_block_size():
    model = assemble([spec("t@1", 4, [10]), spec("t@2", 2, [10]), spec("t@0", 4, [10])], 4)
    assert model["t"] == ParamInfo("ELEMENT_TYPE_FLOAT32", (10,), 10, None)
    for entries, why in [
        ([spec("t@0", 4), spec("t@2", 2)], "missing"),
        ([spec("t@0", 3), spec("t@1", 4)], "block size"),
        ([spec("t", 4), spec("t@0", 4)], "whole and in blocks"),
        ([spec("t@0", 4, [3]), spec("t@1", 1, [3])], "shape"),
    ]:
        with pytest.raises(ClientError) as caught:
            assemble(entries, 4)
        assert caught.value.code == codes.CLIENT_UNKNOWN_TENSOR and why in str(caught.value)


def test_a_large_read_is_split_into_calls_below_the_message_limit():
    # 1 MiB limit: replies carry at most 512 KiB of content; blocks of 32 Ki float32 are 128 KiB.
    client = fake_client(shards=1, block_size=32 << 10, max_message_bytes=1 << 20)
    try:
        values = np.arange(20 * (32 << 10) + 5, dtype=np.float32)  # 21 blocks, all on the one shard
        store(client, "big", values)
        client.learn({"big": ParamInfo("ELEMENT_TYPE_FLOAT32", (values.size,), values.size, None).spec()})
        assert np.array_equal(client.get_params(["big"])["big"], values)
        reads = [list(r.names) for m, _, r in client.calls.sent if m == "GetParams"]
        assert [len(names) for names in reads] == [3] * 7
        assert sorted(n for names in reads for n in names) == sorted(f"big@{k}" for k in range(21))
    finally:
        client.close()


def test_a_block_over_the_message_limit_is_refused_before_anything_is_sent():
    client = fake_client(shards=1, block_size=1 << 20, max_message_bytes=1 << 20)
    try:
        client.init_params({"huge": np.zeros(1 << 20, np.float32)})  # one 4 MiB block
        with pytest.raises(ClientError) as caught:
            client.get_params(["huge"])
        assert caught.value.code == codes.CLIENT_MESSAGE_TOO_LARGE
        assert "huge" in str(caught.value) and "block size" in str(caught.value)
        assert client.calls.sent == []
    finally:
        client.close()


def test_a_reply_the_pserver_finds_too_large_is_asked_for_in_halves():
    client = fake_client(shards=1, block_size=4)
    try:
        values = np.arange(16, dtype=np.float32)
        store(client, "t", values)
        client.init_params({"t": values})
        too_large = FakeRpcError(
            grpc.StatusCode.INVALID_ARGUMENT, "reply of 64 bytes", [("pserver-error-code", "PSERVER_REPLY_TOO_LARGE")]
        )
        client.calls.fail = lambda method, shard, request: too_large if len(request.names) > 1 else None
        assert np.array_equal(client.get_params(["t"])["t"], values)
        sizes = [len(r.names) for _, _, r in client.calls.sent]
        assert sizes == [4, 2, 1, 1, 2, 1, 1]
        client.calls.fail = lambda method, shard, request: too_large
        with pytest.raises(ClientError) as caught:
            client.get_params(["t"])
        assert caught.value.code == codes.CLIENT_MESSAGE_TOO_LARGE
    finally:
        client.close()
