"""Tensors larger than a gRPC message, against real standalone pservers: a 300 MiB shard pulls in
calls below the limit, a push above it goes as a stream, and what cannot be split is
CLIENT_MESSAGE_TOO_LARGE at once (not retried until the step's deadline)."""

import time

import numpy as np
import pytest

import pserver_client
from pserver_client import ClientError, codes
from conftest import Pserver

pytestmark = pytest.mark.integration

MIB = 1 << 20
SGD = {"sgd": {}, "learning_rate": {"base": 1}}


@pytest.fixture
def pserver(tmp_path):
    server = Pserver([], str(tmp_path))
    try:
        yield server
    finally:
        server.stop()


def test_a_300_mib_shard_pulls_and_pushes(pserver):
    elements = 300 * MIB // 4  # float32: 75 blocks of the default 1 Mi elements, all on the one shard
    address = f"127.0.0.1:{pserver.port}"
    with pserver_client.connect(pservers=[address], call_timeout_s=60, step_timeout_s=120) as client:
        values = np.arange(elements, dtype=np.float32)
        client.init_params({"big": values.reshape(300, elements // 300)}, SGD)
        calls = client.calls
        sent = []
        stream, unary = calls.stub(address).SendGradsStream, calls.stub(address).SendGrads
        calls.stub(address).SendGradsStream = Recording(stream, "stream", sent)
        calls.stub(address).SendGrads = Recording(unary, "unary", sent)

        got = client.get_params(["big"])["big"]
        assert got.shape == (300, elements // 300)
        assert np.array_equal(got.reshape(-1), values)

        # 300 MiB of gradient: over the 64 MiB limit, so one stream (all or nothing).
        client.step(lambda ctx: ctx.send_grads({"big": np.full((300, elements // 300), -1, np.float32)}))
        assert sent == ["stream"]
        after = client.get_params(["big"])["big"].reshape(-1)
        assert after[0] == 1 and after[-1] == elements and np.array_equal(after[:: 1 << 16], values[:: 1 << 16] + 1)


class Recording:
    """A stub method that notes which kind of push was made, then makes it."""

    def __init__(self, method, kind, sent):
        self._method, self._kind, self._sent = method, kind, sent

    def future(self, request, timeout):
        self._sent.append(self._kind)
        return self._method.future(request, timeout=timeout)


def test_a_message_over_the_pserver_limit_is_raised_at_once(tmp_path):
    # The pserver takes messages of 1 MiB; the client's limit is the default 64 MiB. A 2 MiB block
    # goes to the pserver in one InitParam, which its gRPC refuses (RESOURCE_EXHAUSTED, no code).
    server = Pserver(["--max-message-mb", "1"], str(tmp_path))
    try:
        address = f"127.0.0.1:{server.port}"
        with pserver_client.connect(pservers=[address], block_size=1 << 20, step_timeout_s=60) as client:
            started = time.monotonic()
            with pytest.raises(ClientError) as caught:
                client.init_params({"w": np.zeros(512 << 10, np.float32)}, SGD)
            assert caught.value.code == codes.CLIENT_MESSAGE_TOO_LARGE
            assert time.monotonic() - started < 20  # not retried until the step's 60 s deadline
    finally:
        server.stop()
