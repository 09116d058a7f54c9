"""In-memory stand-ins for the pserver calls, for unit tests of the step context: a client whose
`calls` is a FakeShards answers from dicts, records what it was sent, and fails on demand."""

import struct

import grpc
import numpy as np

from pserver_client import bucket_of_id, codes, connect, table_shards
from pserver_client._proto.pserver.v1 import parameter_server_pb2 as ps_pb2
from pserver_client._proto.pserver.v1 import context_pb2, tensor_pb2
from pserver_client.errors import ERROR_CODE_KEY
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


def resend_step_error():
    """What a SYNC shard that failed over without the trainer's step before answers."""
    return FakeRpcError(
        grpc.StatusCode.FAILED_PRECONDITION,
        "the trainer's push of the step before is missing here",
        [(ERROR_CODE_KEY, codes.PSERVER_RESEND_STEP)],
    )


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
    failures; `sent` records every (method, shard, request). Tables: `tables[shard][name]` (a
    TableSpec, from InitTable or set by the test) and `rows[shard][name][id]`. Pushes to a shard
    answer `push_replies[shard]` in order (SendGradsResponses), then applied (version 1); `statuses[shard]` is the
    shard's GetShardStatusResponse (its request, with the trainer id, is recorded too).
    `ask_resend` makes a shard answer calls of a step PSERVER_RESEND_STEP (a SYNC failover)."""

    def __init__(self, shards, max_message_bytes=64 << 20):
        super().__init__(max_message_bytes=max_message_bytes)
        self.params = [dict() for _ in range(shards)]
        self.optimizers = [dict() for _ in range(shards)]
        #: tables[shard][name] is the TableSpec InitTable gave; rows[shard][name][id] a row.
        self.tables = [dict() for _ in range(shards)]
        self.rows = [dict() for _ in range(shards)]
        self.sent = []
        self.push_replies = [[] for _ in range(shards)]
        self.statuses = [ps_pb2.GetShardStatusResponse(index=i, shard_epoch=1) for i in range(shards)]
        self.fail = lambda method, shard, request: None
        #: (method, shard, step) → how many more such calls answer PSERVER_RESEND_STEP.
        self.resend_asks = {}

    def ask_resend(self, method, shard, step, times=1):
        """The next `times` calls of `method` with context step `step` to `shard` answer
        PSERVER_RESEND_STEP, as a SYNC shard that failed over without the step before does."""
        self.resend_asks[(method, shard, step)] = times

    def _resend_asked(self, method, shard, request):
        key = (method, shard, request.context.step)
        if self.resend_asks.get(key, 0) <= 0:
            return None
        self.resend_asks[key] -= 1
        return resend_step_error()

    def _answer(self, method, address, request, answer):
        shard = int(address.rsplit(":", 1)[1]) - 1000
        self.sent.append((method, shard, request))
        error = self._resend_asked(method, shard, request) or self.fail(method, shard, request)
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
            return ps_pb2.ListParamsResponse(params=specs, tables=list(self.tables[shard].values()))

        return self._answer("ListParams", address, ps_pb2.ListParamsRequest(context=context), answer)

    def send_grads(self, address, context, grads, timeout, sparse=(), sample_count=None):
        request = ps_pb2.SendGradsRequest(context=context, grads=grads, sparse=sparse, sample_count=sample_count)
        return self._answer("SendGrads", address, request, self._push_reply)

    def _push_reply(self, shard):
        if self.push_replies[shard]:
            return self.push_replies[shard].pop(0)
        return ps_pb2.SendGradsResponse(outcome=ps_pb2.PUSH_OUTCOME_APPLIED, version=1)

    def init_param(self, address, context, param, optimizer, timeout):
        def answer(shard):
            self.params[shard][param.name] = param
            return ps_pb2.InitParamResponse()

        request = ps_pb2.InitParamRequest(context=context, param=param, optimizer=optimizer)
        return self._answer("InitParam", address, request, answer)

    def finish_init_params(self, address, context, timeout):
        request = ps_pb2.FinishInitParamsRequest(context=context)
        return self._answer("FinishInitParams", address, request, lambda shard: ps_pb2.FinishInitParamsResponse())

    def init_table(self, address, context, spec, timeout):
        def answer(shard):
            self.tables[shard][spec.name] = spec
            return ps_pb2.InitTableResponse()

        return self._answer("InitTable", address, ps_pb2.InitTableRequest(context=context, spec=spec), answer)

    def get_rows(self, address, context, table, ids, timeout):
        """Rows from `rows[shard][table][id]`; an id without one reads `missing_row(table, id,
        dim)` (by default id + e/8 for element e: every id its own value). An id placed on
        another shard fails the test."""

        def answer(shard):
            spec = self.tables[shard][table]
            route = table_shards(spec.name, spec.buckets, len(self.tables))
            values, found = [], bytearray((len(ids) // 8 + 7) // 8)
            for i, (id_,) in enumerate(struct.iter_unpack("<q", ids)):
                assert route[bucket_of_id(id_, spec.buckets)] == shard, f"id {id_} sent to shard {shard}"
                row = self.rows[shard].get(table, {}).get(id_)
                if row is not None:
                    found[i // 8] |= 1 << (i % 8)
                else:
                    row = self.missing_row(table, id_, spec.dim)
                values.append(np.asarray(row, dtype="<f4").tobytes())
            return ps_pb2.GetRowsResponse(values=b"".join(values), found=bytes(found))

        request = ps_pb2.GetRowsRequest(context=context, table=table, ids=ids)
        return self._answer("GetRows", address, request, answer)

    @staticmethod
    def missing_row(table, id_, dim):
        return [id_ + e / 8 for e in range(dim)]

    def status(self, address, timeout, trainer_id=0):
        request = ps_pb2.GetShardStatusRequest(context=context_pb2.RequestContext(trainer_id=trainer_id))
        return self._answer("GetShardStatus", address, request, lambda shard: self.statuses[shard])


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
