#!/usr/bin/env python3
"""The data-plane benchmark's Python reference: a minimal parameter server written the plain
grpcio way (a thread pool, numpy), speaking the subset of pserver.v1.ParameterServer a trainer's
data plane uses, so that the pserver can be measured next to it with one driver.

- InitParam: float32 tensors with plain SGD at the request's learning rate, until
  FinishInitParams. GetShardStatus says shard 0 of 1, the epoch and whether it is initialized.
- SendGrads: every gradient of the request is checked (known name, float32, same length), then
  w -= lr * g is applied in place to each tensor under that tensor's lock. A (trainer, step) not
  above the trainer's last applied step is acknowledged PUSH_OUTCOME_DUPLICATE, not applied.
- SendGradsStream: the pieces are copied into one buffer per tensor and applied, as a unary push,
  when the client half-closes.
- GetParams: a copy of each tensor taken under its lock.

Gradients are read with numpy.frombuffer (no copy). No checkpoints, no tables, no access
control: optional mutual TLS only.

Run with Debian's python3 (python3-grpcio, python3-numpy):
    python3 server.py --port 50061 [--tls-cert server.pem --tls-key server.key --tls-client-ca ca.pem]
"""

import argparse
import os
import signal
import sys
import threading
from concurrent import futures

import grpc
import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ next to the client's stubs
# The stubs the Python client is generated with (clients/python/pserver_client/_proto).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../clients/python"))
from pserver_client._proto.pserver.v1 import parameter_server_pb2 as ps_pb2  # noqa: E402
from pserver_client._proto.pserver.v1 import parameter_server_pb2_grpc as ps_grpc  # noqa: E402
from pserver_client._proto.pserver.v1 import tensor_pb2  # noqa: E402

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
F32 = np.dtype("<f4")  # little-endian float32, as on the wire
FLOAT32 = tensor_pb2.ELEMENT_TYPE_FLOAT32
SHARD_EPOCH = 1  # a standalone shard that never restarts keeps one epoch


class Tensor:
    __slots__ = ("w", "lr", "shape", "lock")

    def __init__(self, w, lr, shape):
        self.w = w
        self.lr = lr
        self.shape = shape
        self.lock = threading.Lock()


def check_epoch(ctx, context, zero_allowed):
    if ctx.shard_epoch == SHARD_EPOCH or (ctx.shard_epoch == 0 and zero_allowed):
        return
    context.abort(grpc.StatusCode.ABORTED, "shard epoch %d, the shard's is %d" % (ctx.shard_epoch, SHARD_EPOCH))


def sgd_rate(name, opt, context):
    """The learning rate of a plain SGD config; any other rule or option is refused."""
    if not opt.learning_rate.HasField("base"):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "%s: optimizer.learning_rate.base is required" % name)
    plain = (
        opt.WhichOneof("algorithm") in (None, "sgd")
        and opt.sgd.momentum == 0
        and opt.sgd.weight_decay == 0
        and not opt.HasField("clip_value")
        and not opt.HasField("clip_norm")
        and opt.learning_rate.WhichOneof("policy") in (None, "constant")
    )
    if not plain:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "%s: only plain SGD at a constant rate is served" % name)
    return np.float32(opt.learning_rate.base)


class ParameterServer(ps_grpc.ParameterServerServicer):
    def __init__(self):
        self.tensors = {}
        self.initialized = False
        self.lock = threading.Lock()  # tensors and initialized
        self.marks = {}  # trainer id -> last applied step
        self.marks_lock = threading.Lock()

    def _lookup(self, name, element_type, context):
        with self.lock:
            t = self.tensors.get(name)
        if t is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown tensor %r" % name)
        if element_type != FLOAT32:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "%s: gradient is not float32" % name)
        return t

    def InitParam(self, request, context):
        check_epoch(request.context, context, True)
        p = request.param
        if not p.name:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "param.name is empty")
        if p.element_type != FLOAT32 or len(p.content) % 4:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "%s: only float32 tensors are served" % p.name)
        lr = sgd_rate(p.name, request.optimizer, context)
        t = Tensor(np.frombuffer(p.content, dtype=F32).copy(), lr, list(p.shape))  # own, writable copy
        with self.lock:
            if self.initialized:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the shard is already initialized")
            self.tensors[p.name] = t
        return ps_pb2.InitParamResponse(shard_epoch=SHARD_EPOCH)

    def FinishInitParams(self, request, context):
        check_epoch(request.context, context, True)
        with self.lock:
            if self.initialized:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the shard is already initialized")
            self.initialized = True
        return ps_pb2.FinishInitParamsResponse(shard_epoch=SHARD_EPOCH)

    def GetShardStatus(self, request, context):
        with self.lock:
            initialized = self.initialized
        return ps_pb2.GetShardStatusResponse(
            index=0,
            shard_count=1,
            shard_epoch=SHARD_EPOCH,
            mode=ps_pb2.SHARD_MODE_STANDALONE,
            initialized=initialized,
        )

    def _check_push(self, ctx, context):
        if ctx.trainer_id == 0 or ctx.step == 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a push needs context.trainer_id and context.step")
        check_epoch(ctx, context, False)
        with self.lock:
            if not self.initialized:
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the shard is not initialized")

    def _apply(self, ctx, updates):
        """Applies checked (tensor, gradient) pairs once per (trainer, step). The step mark is
        taken before the updates run: a trainer keeps one push in flight per shard."""
        with self.marks_lock:
            last = self.marks.get(ctx.trainer_id, 0)
            if ctx.step <= last:
                return ps_pb2.SendGradsResponse(
                    shard_epoch=SHARD_EPOCH, outcome=ps_pb2.PUSH_OUTCOME_DUPLICATE, last_applied_step=last
                )
            self.marks[ctx.trainer_id] = ctx.step
        for t, g in updates:
            with t.lock:
                t.w -= t.lr * g  # in place
        return ps_pb2.SendGradsResponse(
            shard_epoch=SHARD_EPOCH, outcome=ps_pb2.PUSH_OUTCOME_APPLIED, last_applied_step=ctx.step
        )

    def SendGrads(self, request, context):
        self._check_push(request.context, context)
        if request.sparse:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "tables are not served")
        updates, seen = [], set()
        for g in request.grads:
            t = self._lookup(g.name, g.element_type, context)
            if g.name in seen:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "%s: gradient given twice" % g.name)
            seen.add(g.name)
            if len(g.content) != t.w.nbytes:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "%s: gradient has %d bytes, the tensor %d" % (g.name, len(g.content), t.w.nbytes),
                )
            updates.append((t, np.frombuffer(g.content, dtype=F32)))
        return self._apply(request.context, updates)

    def SendGradsStream(self, request_iterator, context):
        ctx = None
        staged = {}  # name -> [tensor, buffer, bytes filled], in arrival order
        for chunk in request_iterator:
            if ctx is None:
                if not chunk.HasField("context"):
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the stream's first message has no context")
                ctx = chunk.context
                self._check_push(ctx, context)
            if chunk.sparse:
                context.abort(grpc.StatusCode.UNIMPLEMENTED, "tables are not served")
            for piece in chunk.grads:
                st = staged.get(piece.name)
                if st is None:
                    t = self._lookup(piece.name, piece.element_type, context)
                    st = staged[piece.name] = [t, bytearray(t.w.nbytes), 0]
                t, buf, fill = st
                end = fill + len(piece.content)
                if piece.offset != fill or end > len(buf):
                    context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        "%s: piece of %d bytes at offset %d, %d of %d bytes received"
                        % (piece.name, len(piece.content), piece.offset, fill, len(buf)),
                    )
                buf[fill:end] = piece.content
                st[2] = end
        if ctx is None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "empty stream")
        updates = []
        for name, (t, buf, fill) in staged.items():
            if fill != len(buf):
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, "%s: incomplete gradient, %d of %d bytes" % (name, fill, len(buf))
                )
            updates.append((t, np.frombuffer(buf, dtype=F32)))
        return self._apply(ctx, updates)

    def GetParams(self, request, context):
        check_epoch(request.context, context, True)
        out = []
        for name in request.names:
            with self.lock:
                t = self.tensors.get(name)
            if t is None:
                context.abort(grpc.StatusCode.NOT_FOUND, "unknown tensor %r" % name)
            with t.lock:
                content = t.w.tobytes()  # a snapshot, so later updates cannot tear it
            out.append(tensor_pb2.Tensor(name=name, element_type=FLOAT32, shape=t.shape, content=content))
        return ps_pb2.GetParamsResponse(shard_epoch=SHARD_EPOCH, params=out)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--workers", type=int, default=16, help="thread-pool size")
    ap.add_argument("--tls-cert", help="serve TLS with this certificate (PEM)")
    ap.add_argument("--tls-key", help="the certificate's key (PEM)")
    ap.add_argument("--tls-client-ca", help="require client certificates signed by this CA (PEM)")
    args = ap.parse_args()

    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=args.workers),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    ps_grpc.add_ParameterServerServicer_to_server(ParameterServer(), server)
    address = "%s:%d" % (args.host, args.port)
    if args.tls_cert:
        credentials = grpc.ssl_server_credentials(
            [(read(args.tls_key), read(args.tls_cert))],
            root_certificates=read(args.tls_client_ca) if args.tls_client_ca else None,
            require_client_auth=bool(args.tls_client_ca),
        )
        bound = server.add_secure_port(address, credentials)
    else:
        bound = server.add_insecure_port(address)
    if bound == 0:
        sys.exit("cannot bind %s" % address)
    server.start()
    print("python reference server listening on %s" % address, flush=True)

    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
    server.stop(grace=1).wait()


if __name__ == "__main__":
    main()
