"""Gradients travel with their shape, and one of the wrong shape, element count or element type
is refused by the client (CLIENT_SHAPE_MISMATCH) before anything is sent."""

import array

import grpc
import numpy as np
import pytest

from fake_shards import Done, FakeRpcError, fake_client
from pserver_client import ClientError, Param, PserverError, codes
from pserver_client._proto.pserver.v1 import context_pb2
from pserver_client._proto.pserver.v1 import tensor_pb2
from pserver_client.shard_calls import ShardCalls


@pytest.fixture
def client():
    c = fake_client(shards=2, block_size=4)
    c.init_params({"layer1.weight": np.zeros((3, 4), np.float32), "bias": np.zeros(3, np.float32)})
    yield c
    c.close()


def pushed(client):
    return {t.name: t for method, _, request in client.calls.sent if method == "SendGrads" for t in request.grads}


@pytest.mark.parametrize(
    "gradient,actual",
    [
        (np.ones(2, np.float32), (2,)),  # the wrong element count
        (np.ones((4, 3), np.float32), (4, 3)),  # transposed: the right count, the wrong shape
        (np.ones(12, np.float32), (12,)),  # flattened
    ],
)
def test_a_gradient_of_another_shape_is_refused_before_anything_is_sent(client, gradient, actual):
    with pytest.raises(ClientError) as caught:
        client.step(lambda ctx: ctx.send_grads({"layer1.weight": gradient}))
    err = caught.value
    assert err.code == codes.CLIENT_SHAPE_MISMATCH
    assert (err.tensor, err.expected, err.actual) == ("layer1.weight", (3, 4), actual)
    assert "layer1.weight" in str(err) and "[3, 4]" in str(err) and str(list(actual)) in str(err)
    assert client.calls.sent == []


def test_a_gradient_of_another_element_type_is_refused(client):
    with pytest.raises(ClientError) as caught:
        client.step(lambda ctx: ctx.send_grads({"bias": np.ones(3, np.float64)}))
    assert caught.value.code == codes.CLIENT_SHAPE_MISMATCH
    assert "FLOAT64" in str(caught.value) and "FLOAT32" in str(caught.value)
    assert client.calls.sent == []


def test_every_block_of_a_push_carries_the_whole_shape(client):
    client.step(lambda ctx: ctx.send_grads({"layer1.weight": np.ones((3, 4), np.float32), "bias": np.ones(3, np.float32)}))
    grads = pushed(client)
    assert sorted(grads) == ["bias", "layer1.weight@0", "layer1.weight@1", "layer1.weight@2"]
    assert [list(grads[f"layer1.weight@{k}"].shape) for k in range(3)] == [[3, 4]] * 3
    assert list(grads["bias"].shape) == [3]


def test_a_flat_buffer_is_checked_by_its_element_count_and_sent_with_the_declared_shape(client):
    client.step(lambda ctx: ctx.send_grads({"layer1.weight": array.array("f", [1.0] * 12)}))
    assert [list(t.shape) for t in pushed(client).values()] == [[3, 4]] * 3
    with pytest.raises(ClientError) as caught:
        client.step(lambda ctx: ctx.send_grads({"layer1.weight": array.array("f", [1.0] * 11)}))
    assert caught.value.code == codes.CLIENT_SHAPE_MISMATCH


def test_init_sends_each_array_shape_and_checks_a_given_one():
    client = fake_client(shards=1, block_size=100)
    client._initializer = True
    inits = []
    client.calls.init_param = lambda address, context, param, optimizer, timeout: inits.append(param) or Done()
    client.calls.finish_init_params = lambda address, context, timeout: Done()
    try:
        client.init_params(
            {"m": np.zeros((2, 3), np.float32), "v": np.zeros(5, np.float32), "p": Param(np.zeros(6, np.float32), shape=(3, 2))},
            {"sgd": {}, "learning_rate": {"base": 1}},
        )
        assert {p.name: list(p.shape) for p in inits} == {"m": [2, 3], "v": [5], "p": [3, 2]}
        with pytest.raises(ClientError) as caught:
            client.init_params({"q": Param(np.zeros(6, np.float32), shape=(4, 2))})
        assert caught.value.code == codes.CLIENT_SHAPE_MISMATCH
    finally:
        client.close()


class RecordingStub:
    """A ParameterServer stub that records which push method was called, and with what."""

    def __init__(self):
        self.calls = []
        self.SendGrads = self._method("SendGrads")
        self.SendGradsStream = self._method("SendGradsStream")

    def _method(self, name):
        stub = self

        class Method:
            def future(self, request, timeout):
                stub.calls.append((name, list(request) if name == "SendGradsStream" else request))
                return None

        return Method()


def test_a_push_above_the_message_limit_is_streamed_with_its_shape_on_the_first_piece():
    calls = ShardCalls(max_message_bytes=1 << 20, stream_chunk_bytes=256 << 10)
    stub = calls._stubs["pserver:1"] = RecordingStub()
    content = np.arange(300_000, dtype="<f4").tobytes()  # 1.2 MB: over the 1 MiB limit
    grad = tensor_pb2.Tensor(name="big", element_type=tensor_pb2.ELEMENT_TYPE_FLOAT32, shape=[600, 500], content=content)
    calls.send_grads("pserver:1", context_pb2.RequestContext(trainer_id=1, step=1), [grad], 5)
    small = tensor_pb2.Tensor(name="small", element_type=tensor_pb2.ELEMENT_TYPE_FLOAT32, shape=[2], content=b"\0" * 8)
    calls.send_grads("pserver:1", None, [small], 5)
    (method, chunks), (unary, request) = stub.calls
    assert (method, unary) == ("SendGradsStream", "SendGrads")
    pieces = [c.grads[0] for c in chunks]
    assert b"".join(p.content for p in pieces) == content
    assert all(len(p.content) <= 256 << 10 for p in pieces) and len(pieces) == 5
    assert [list(p.shape) for p in pieces] == [[600, 500]] + [[]] * 4
    assert [p.offset for p in pieces] == [k * (256 << 10) for k in range(5)]
    assert list(request.grads[0].shape) == [2]


def test_the_server_refusal_of_a_shape_is_a_typed_error(client):
    # A client that knows the tensor checks first; should the pserver still refuse (another
    # client's model), its PSERVER_SHAPE_MISMATCH reaches the caller as is, not retried.
    client.calls.fail = lambda method, shard, request: FakeRpcError(
        grpc.StatusCode.INVALID_ARGUMENT, "gradient bias: shape [4, 1]", [("pserver-error-code", "PSERVER_SHAPE_MISMATCH")]
    )
    with pytest.raises(PserverError) as caught:
        client.step(lambda ctx: ctx.send_grads({"bias": np.ones(3, np.float32)}))
    assert caught.value.code == codes.PSERVER_SHAPE_MISMATCH
    assert len(client.calls.sent) == 1
