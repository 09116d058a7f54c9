"""The pserver calls, one channel per address. Calls return grpc futures so that a step context
can cancel them when its view goes stale."""

from __future__ import annotations

import threading
from typing import Any, Iterator, Optional, Sequence

import grpc

from ._proto.pserver.v1 import parameter_server_pb2 as ps_pb2
from ._proto.pserver.v1 import parameter_server_pb2_grpc as ps_grpc
from .security import ChannelFactory

MIB = 1024 * 1024
#: The client's default gRPC message limit, both ways (the pserver's default is 128 MiB).
DEFAULT_MAX_MESSAGE_BYTES = 64 * MIB
#: What a message spends beside tensor contents: a tensor's name, type and shape; the context.
TENSOR_OVERHEAD_BYTES = 256
REQUEST_OVERHEAD_BYTES = 1024


def channel_options(max_message_bytes: int) -> list[tuple[str, int]]:
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
    ]


class ShardCalls:
    """One ParameterServer stub per address; each call has a deadline. `channels` (a
    ChannelFactory) carries the client's TLS and token; plaintext without one."""

    def __init__(
        self,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        stream_chunk_bytes: int = 4 * MIB,
        channels: Optional[ChannelFactory] = None,
    ) -> None:
        self.channels = channels or ChannelFactory()
        self.max_message_bytes = max_message_bytes
        self.stream_chunk_bytes = min(stream_chunk_bytes, max_message_bytes // 2)
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._stubs: dict[str, Any] = {}

    def stub(self, address: str) -> Any:
        with self._lock:
            stub = self._stubs.get(address)
            if stub is None:
                channel = self.channels.open(address, channel_options(self.max_message_bytes))
                self._channels[address] = channel
                stub = self._stubs[address] = ps_grpc.ParameterServerStub(channel)
            return stub

    def status(self, address: str, timeout: float) -> grpc.Future:
        return self.stub(address).GetShardStatus.future(ps_pb2.GetShardStatusRequest(), timeout=timeout)

    def init_param(self, address: str, context: Any, param: Any, optimizer: Any, timeout: float) -> grpc.Future:
        request = ps_pb2.InitParamRequest(context=context, param=param, optimizer=optimizer)
        return self.stub(address).InitParam.future(request, timeout=timeout)

    def finish_init_params(self, address: str, context: Any, timeout: float) -> grpc.Future:
        request = ps_pb2.FinishInitParamsRequest(context=context)
        return self.stub(address).FinishInitParams.future(request, timeout=timeout)

    def get_params(self, address: str, context: Any, names: Sequence[str], timeout: float) -> grpc.Future:
        request = ps_pb2.GetParamsRequest(context=context, names=names)
        return self.stub(address).GetParams.future(request, timeout=timeout)

    def list_params(self, address: str, context: Any, timeout: float) -> grpc.Future:
        request = ps_pb2.ListParamsRequest(context=context)
        return self.stub(address).ListParams.future(request, timeout=timeout)

    def reply_budget_bytes(self) -> int:
        """How many content bytes one GetParams reply may carry: half the limit, so that the
        tensors' names and shapes, and a server whose limit is somewhat lower, still fit."""
        return self.max_message_bytes // 2

    def send_grads(self, address: str, context: Any, grads: Sequence[Any], timeout: float) -> grpc.Future:
        """One push: unary when it fits in a message, else streamed (applied all or nothing)."""
        size = sum(len(g.content) + TENSOR_OVERHEAD_BYTES for g in grads) + REQUEST_OVERHEAD_BYTES
        if size < self.max_message_bytes:
            request = ps_pb2.SendGradsRequest(context=context, grads=grads)
            return self.stub(address).SendGrads.future(request, timeout=timeout)
        return self.stub(address).SendGradsStream.future(self.pieces(context, grads), timeout=timeout)

    def pieces(self, context: Any, grads: Sequence[Any]) -> Iterator[Any]:
        """A push as stream chunks: each gradient in pieces of `stream_chunk_bytes` from offset 0,
        its shape on the first piece (the pserver reads it there only)."""
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
                            shape=grad.shape if offset == 0 else (),
                        )
                    ],
                )
                first = False
                offset += chunk
                if offset >= len(content):
                    break

    def close(self) -> None:
        with self._lock:
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._stubs.clear()
