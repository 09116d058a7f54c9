"""In-memory stand-ins for the pserver calls, for unit tests of the step context: a client whose
`calls` is a FakeShards answers from dicts, records what it was sent, and fails on demand."""

import grpc

from pserver_client import connect
from pserver_client._proto.pserver.v1 import parameter_server_pb2 as ps_pb2
from pserver_client._proto.pserver.v1 import tensor_pb2
from pserver_client.shard_calls import ShardCalls
from pserver_client.view import ShardRoute, View


class FakeRpcError(grpc.RpcError):
    """What a failed grpc future raises: a status, details and trailers."""

    def __init__(self, status, details="", trailers=()):
        super().__init__(details)
        self._status, self._details, self._trailers = status, details, tuple(trailers)

    def code(self):
        return self._status

    def details(self):
        return self._details

    def trailing_metadata(self):
        return self._trailers


class Done:
    """A finished grpc future."""

    def __init__(self, value=None, error=None):
        self._value, self._error = value, error

    def result(self):
        if self._error is not None:
            raise self._error
        return self._value

    def cancel(self):
        return False


class FakeShards(ShardCalls):
    """The calls of a client against `shards` in-memory pservers: `params[shard][block name]` is a
    Tensor; `fail` (a function of (method, shard, request) returning an error or None) injects
    failures; `sent` records every (method, shard, request)."""

    def __init__(self, shards, max_message_bytes=64 << 20):
        super().__init__(max_message_bytes=max_message_bytes)
        self.params = [dict() for _ in range(shards)]
        self.optimizers = [dict() for _ in range(shards)]
        self.sent = []
        self.fail = lambda method, shard, request: None

    def _answer(self, method, address, request, answer):
        shard = int(address.rsplit(":", 1)[1]) - 1000
        self.sent.append((method, shard, request))
        error = self.fail(method, shard, request)
        return Done(error=error) if error is not None else Done(answer(shard))

    def get_params(self, address, context, names, timeout):
        request = ps_pb2.GetParamsRequest(context=context, names=names)
        return self._answer(
            "GetParams",
            address,
            request,
            lambda shard: ps_pb2.GetParamsResponse(params=[self.params[shard][n] for n in names]),
        )

    def list_params(self, address, context, timeout):
        def answer(shard):
            specs = []
            for name, t in self.params[shard].items():
                spec = ps_pb2.ParamSpec(
                    name=name,
                    element_type=t.element_type,
                    shape=t.shape,
                    elements=len(t.content) // (8 if t.element_type == tensor_pb2.ELEMENT_TYPE_FLOAT64 else 4),
                )
                if name in self.optimizers[shard]:
                    spec.optimizer.CopyFrom(self.optimizers[shard][name])
                specs.append(spec)
            return ps_pb2.ListParamsResponse(params=specs)

        return self._answer("ListParams", address, ps_pb2.ListParamsRequest(context=context), answer)

    def send_grads(self, address, context, grads, timeout):
        request = ps_pb2.SendGradsRequest(context=context, grads=grads)
        return self._answer("SendGrads", address, request, lambda shard: ps_pb2.SendGradsResponse())

    def status(self, address, timeout):
        return Done(ps_pb2.GetShardStatusResponse(shard_epoch=1))


def fake_client(shards=2, block_size=4, max_message_bytes=64 << 20, **options):
    """A standalone client over `shards` fake pservers (addresses 127.0.0.1:1000+i, epoch 1),
    with a complete view and a FakeShards as its calls. Nothing is dialled."""
    addresses = [f"127.0.0.1:{1000 + i}" for i in range(shards)]
    options.setdefault("step_timeout_s", 10)
    client = connect(pservers=addresses, block_size=block_size, initializer=False, call_timeout_s=1, **options)
    client.calls.close()
    client.calls = FakeShards(shards, max_message_bytes)
    client._apply_view(
        View(shards, block_size, tuple(ShardRoute(i, a, 1, True) for i, a in enumerate(addresses)), revision=10)
    )
    client.refresh_view = lambda: None
    return client
