"""The pserver calls, one channel per address. Calls return grpc futures so that a step context
can cancel them when its view goes stale."""

from __future__ import annotations

import threading
from typing import Any, Iterator, Optional, Sequence

import grpc

from ._proto.pserver.v1 import parameter_server_pb2 as ps_pb2
from ._proto.pserver.v1 import parameter_server_pb2_grpc as ps_grpc
from ._proto.pserver.v1 import context_pb2, table_pb2
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

    def status(self, address: str, timeout: float, trainer_id: int = 0) -> grpc.Future:
        """The shard's status; with a trainer id, also that trainer's last step on it."""
        request = ps_pb2.GetShardStatusRequest(context=context_pb2.RequestContext(trainer_id=trainer_id))
        return self.stub(address).GetShardStatus.future(request, timeout=timeout)

    def init_param(self, address: str, context: Any, param: Any, optimizer: Any, timeout: float) -> grpc.Future:
        request = ps_pb2.InitParamRequest(context=context, param=param, optimizer=optimizer)
        return self.stub(address).InitParam.future(request, timeout=timeout)

    def finish_init_params(self, address: str, context: Any, timeout: float) -> grpc.Future:
        request = ps_pb2.FinishInitParamsRequest(context=context)
        return self.stub(address).FinishInitParams.future(request, timeout=timeout)

    def init_table(self, address: str, context: Any, spec: Any, timeout: float) -> grpc.Future:
        """Creates a table's part (its buckets) on the shard; before FinishInitParams, as InitParam."""
        request = ps_pb2.InitTableRequest(context=context, spec=spec)
        return self.stub(address).InitTable.future(request, timeout=timeout)

    def get_rows(self, address: str, context: Any, table: str, ids: bytes, timeout: float) -> grpc.Future:
        """Rows of a table by id (int64 little-endian bytes), read-only, in request order."""
        request = ps_pb2.GetRowsRequest(context=context, table=table, ids=ids)
        return self.stub(address).GetRows.future(request, timeout=timeout)

    def rows_per_call(self, dim: int) -> int:
        """Ids per GetRows call of a table with `dim` values per row, so that a reply (dim float32
        values and a found bit per id) and a request (8 bytes per id) stay under the reply budget."""
        per_row = max(dim * 4 + 1, 8)
        return max(1, (self.reply_budget_bytes() - REQUEST_OVERHEAD_BYTES) // per_row)

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

    def send_grads(
        self,
        address: str,
        context: Any,
        grads: Sequence[Any],
        timeout: float,
        sparse: Sequence[Any] = (),
        sample_count: Optional[int] = None,
    ) -> grpc.Future:
        """One push, dense and row gradients together: unary when it fits in a message, else
        streamed (applied all or nothing), the row gradients in slices of whole rows.
        `sample_count`, when given, is the push's weight in a SYNC step (0: a step without data,
        no gradients)."""
        size = (
            sum(len(g.content) + TENSOR_OVERHEAD_BYTES for g in grads)
            + sum(len(s.ids) + len(s.grads) + len(s.counts) + TENSOR_OVERHEAD_BYTES for s in sparse)
            + REQUEST_OVERHEAD_BYTES
        )
        if size < self.max_message_bytes:
            request = ps_pb2.SendGradsRequest(context=context, grads=grads, sparse=sparse, sample_count=sample_count)
            return self.stub(address).SendGrads.future(request, timeout=timeout)
        pieces = self.pieces(context, grads, sparse, sample_count)
        return self.stub(address).SendGradsStream.future(pieces, timeout=timeout)

    def pieces(
        self, context: Any, grads: Sequence[Any], sparse: Sequence[Any] = (), sample_count: Optional[int] = None
    ) -> Iterator[Any]:
        """A push as stream chunks: each gradient in pieces of `stream_chunk_bytes` from offset 0,
        its shape on the first piece (the pserver reads it there only); then each table's rows in
        slices of whole rows of about that size (the pserver concatenates a table's slices). The
        first chunk carries the context and the sample count (the pserver reads them there only)."""
        chunk = self.stream_chunk_bytes
        first = True
        for grad in grads:
            content = grad.content
            offset = 0
            while True:
                yield ps_pb2.SendGradsChunk(
                    context=context if first else None,
                    sample_count=sample_count if first else None,
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
        for rows in sparse:
            for piece in row_slices(rows, chunk):
                yield ps_pb2.SendGradsChunk(
                    context=context if first else None,
                    sample_count=sample_count if first else None,
                    sparse=[piece],
                )
                first = False

    def close(self) -> None:
        with self._lock:
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._stubs.clear()


def row_slices(rows: Any, chunk_bytes: int) -> Iterator[Any]:
    """A table's row gradients (a SparseGrad) in slices of whole rows (ids, their gradient rows
    and counts together) of about `chunk_bytes` each."""
    n = len(rows.ids) // 8
    if n == 0:
        yield rows
        return
    row_bytes = len(rows.grads) // n
    counted = len(rows.counts) > 0
    step = max(1, chunk_bytes // (8 + row_bytes + (4 if counted else 0)))
    for start in range(0, n, step):
        end = min(n, start + step)
        piece = table_pb2.SparseGrad(
            table=rows.table,
            ids=rows.ids[start * 8 : end * 8],
            grads=rows.grads[start * row_bytes : end * row_bytes],
        )
        if counted:
            piece.counts = rows.counts[start * 4 : end * 4]
        yield piece
