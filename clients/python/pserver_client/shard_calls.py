"""The pserver calls, one channel per address. Calls return grpc futures so that a step context
can cancel them when its view goes stale."""

import threading

from ._proto.pserver.v1 import parameter_server_pb2 as ps_pb2
from ._proto.pserver.v1 import parameter_server_pb2_grpc as ps_grpc
from .security import ChannelFactory

MIB = 1024 * 1024


def channel_options(max_message_bytes):
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]


class ShardCalls:
    """One ParameterServer stub per address; each call has a deadline. `channels` (a
    ChannelFactory) carries the client's TLS and token; plaintext without one."""

    def __init__(self, max_message_bytes=64 * MIB, stream_chunk_bytes=4 * MIB, channels=None):
        self.channels = channels or ChannelFactory()
        self.max_message_bytes = max_message_bytes
        self.stream_chunk_bytes = stream_chunk_bytes
        self._lock = threading.Lock()
        self._channels = {}
        self._stubs = {}

    def stub(self, address):
        with self._lock:
            stub = self._stubs.get(address)
            if stub is None:
                channel = self.channels.open(address, channel_options(self.max_message_bytes))
                self._channels[address] = channel
                stub = self._stubs[address] = ps_grpc.ParameterServerStub(channel)
            return stub

    def status(self, address, timeout):
        return self.stub(address).GetShardStatus.future(ps_pb2.GetShardStatusRequest(), timeout=timeout)

    def init_param(self, address, context, param, optimizer, timeout):
        request = ps_pb2.InitParamRequest(context=context, param=param, optimizer=optimizer)
        return self.stub(address).InitParam.future(request, timeout=timeout)

    def finish_init_params(self, address, context, timeout):
        request = ps_pb2.FinishInitParamsRequest(context=context)
        return self.stub(address).FinishInitParams.future(request, timeout=timeout)

    def get_params(self, address, context, names, timeout):
        request = ps_pb2.GetParamsRequest(context=context, names=names)
        return self.stub(address).GetParams.future(request, timeout=timeout)

    def send_grads(self, address, context, grads, timeout):
        """One push: unary when it fits in a message, else streamed (applied all or nothing)."""
        size = sum(len(g.content) + 64 for g in grads) + 1024
        if size < self.max_message_bytes:
            request = ps_pb2.SendGradsRequest(context=context, grads=grads)
            return self.stub(address).SendGrads.future(request, timeout=timeout)
        return self.stub(address).SendGradsStream.future(self._pieces(context, grads), timeout=timeout)

    def _pieces(self, context, grads):
        chunk = self.stream_chunk_bytes
        first = True
        for grad in grads:
            content = grad.content
            offset = 0
            while True:
                yield ps_pb2.SendGradsChunk(
                    context=context if first else None,
                    grads=[
                        ps_pb2.GradientChunk(
                            name=grad.name,
                            element_type=grad.element_type,
                            offset=offset,
                            content=content[offset : offset + chunk],
                        )
                    ],
                )
                first = False
                offset += chunk
                if offset >= len(content):
                    break

    def close(self):
        with self._lock:
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._stubs.clear()
