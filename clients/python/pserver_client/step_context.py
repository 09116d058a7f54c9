"""The epoch context of one run of a training step.

It holds the view (every shard's address and epoch) and the step's identity — the trainer id and
step number it began with, and its pass. Every call made through it is stamped with them, never
with live state read at send time, which is how work done under epoch 6 once went out labelled 7.
A session that expires mid-step gives the client a new trainer id for later steps; a step that
began under the old id keeps it on every re-run, so a shard that applied its push already answers
the re-run as a duplicate. When the cluster's view changes for a shard, the client aborts the
context: its calls end with a stale-view error and `Client.step` runs the step again with a fresh
context and the same identity.
"""

import concurrent.futures
import random
import threading
import time

import grpc

from ._proto.pserver.v1 import context_pb2, tensor_pb2
from .errors import ClientError, PserverError, is_retryable, is_shard_unavailable, is_stale_view
from .placement import place_tensor
from .tensors import ELEMENT_SIZE, from_wire, to_wire

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None


def backoff_s(attempt, base=0.05, cap=1.0):
    """Exponential backoff with full jitter, capped at 1 s so that a client waiting out a failover
    notices within about a second that the shard serves again."""
    return random.random() * min(cap, base * 2**attempt)


class StepContext:
    def __init__(self, host, view, trainer_id, step, pass_, deadline):
        self._host = host
        #: The view the step runs under (a snapshot).
        self.view = view
        #: The trainer id the step began with: the same on every run, whatever the session does.
        self.trainer_id = trainer_id
        #: The step number: the same on every run of the step.
        self.step = step
        #: The dataset pass the step belongs to.
        self.pass_ = pass_
        #: When the step must be over (time.monotonic()); it caps every call's own deadline.
        self.deadline = deadline
        self._aborted = threading.Event()
        self._reason = None
        self._lock = threading.Lock()
        self._calls = set()

    # --- lifecycle (used by the client) ---

    def abort(self, reason):
        """Ends the context: its calls in flight are cancelled and later ones refused."""
        with self._lock:
            if self._reason is None:
                self._reason = reason
            self._aborted.set()
            calls = list(self._calls)
        for call in calls:
            call.cancel()

    def close(self):
        """The step is over: calls still running for it (after another call failed) stop."""
        self.abort(ClientError("CLIENT_STALE_VIEW", f"step {self.step}: this run is over"))

    def uses_changed(self, changed):
        return any(i < len(self.view.shards) for i in changed)

    # --- what fn calls ---

    def get_params(self, names):
        """The current values of whole tensors (declared by init_params): blocks fetched from their
        shards in parallel, one call per shard, and reassembled. Returns {name: array}."""
        buffers = {}
        by_shard = {}
        for name in names:
            spec = self._host.spec(name)
            buffers[name] = bytearray(spec.length * ELEMENT_SIZE[spec.element_type])
            for block in place_tensor(name, spec.length, self.view.block_size, self.view.shard_count):
                by_shard.setdefault(block.shard, []).append((block.name, name, block.start))

        def fetch(shard, blocks):
            reply = self.with_retries(
                shard,
                lambda address, context, timeout: self._host.calls.get_params(
                    address, context, [b[0] for b in blocks], timeout
                ),
            )
            for (_, tensor, start), param in zip(blocks, reply.params):
                size = ELEMENT_SIZE[self._host.spec(tensor).element_type]
                buffers[tensor][start * size : start * size + len(param.content)] = param.content

        self._fan_out([(lambda s=s, b=b: fetch(s, b)) for s, b in by_shard.items()])
        out = {}
        for name in names:
            spec = self._host.spec(name)
            out[name] = from_wire(buffers[name], spec.element_type, spec.shape)
        return out

    def send_grads(self, grads):
        """Pushes the step's gradients ({name: array}): clipped by global norm if configured,
        split into blocks, sent as one push per shard in parallel, each retried with the same step
        until it is known applied (a retry of an applied push is acknowledged as a duplicate)."""
        by_shard = {}
        for name, values in self._clipped(grads).items():
            spec = self._host.spec(name)
            try:
                wire = to_wire(values)
            except TypeError:
                wire = to_wire(values, spec.element_type)
            if wire.length != spec.length:
                raise ClientError(
                    "CLIENT_UNKNOWN_TENSOR", f"gradient {name}: {wire.length} elements, the tensor has {spec.length}"
                )
            for block in place_tensor(name, spec.length, self.view.block_size, self.view.shard_count):
                by_shard.setdefault(block.shard, []).append(
                    tensor_pb2.Tensor(
                        name=block.name, element_type=wire.element_type, content=bytes(wire.block(block.start, block.end))
                    )
                )

        def push(shard, tensors):
            return self.with_retries(
                shard,
                lambda address, context, timeout: self._host.calls.send_grads(address, context, tensors, timeout),
            )

        self._fan_out([(lambda s=s, t=t: push(s, t)) for s, t in by_shard.items()])

    def request_context(self, shard):
        """The RequestContext of a call to `shard`: this context's own view and the step's identity."""
        route = self.view.shards[shard] if shard < len(self.view.shards) else None
        return context_pb2.RequestContext(
            trainer_id=self.trainer_id,
            step=self.step,
            shard_epoch=route.epoch if route else 0,
            **{"pass": self.pass_},
        )

    def with_retries(self, shard, call):
        """Runs `call(address, context, timeout)` (returning a grpc future) against `shard`,
        retrying while its outcome is unknown (connection lost, deadline), the pserver is busy
        (after its retry hint) or the shard is not served at the address for now (recovering,
        fenced, shutting down: until it serves or a new view aborts the context). Retries back off
        with jitter and end with the step's deadline. A moved epoch ends the step (stale view)."""
        attempt = 0
        while True:
            self._throw_if_stale(shard)
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise ClientError("CLIENT_DEADLINE_EXCEEDED", f"step {self.step}: not done in time")
            route = self.view.shards[shard]
            try:
                return self._wait(call(route.address, self.request_context(shard), min(self._host.call_timeout_s, left)))
            except PserverError as err:
                if self._aborted.is_set():
                    raise self._stale_error() from err
                if is_stale_view(err):
                    self._host.stale_shard(shard, err.shard_epoch)
                    raise ClientError("CLIENT_STALE_VIEW", f"shard {shard}: {err}") from err
                if not is_retryable(err) and not is_shard_unavailable(err):
                    raise
                hint = err.retry_after_ms / 1000 if err.retry_after_ms is not None else backoff_s(attempt)
                attempt += 1
                if self._aborted.wait(min(hint, max(0.0, self.deadline - time.monotonic()))):
                    raise self._stale_error() from err

    # --- internals ---

    def _wait(self, future):
        with self._lock:
            if self._aborted.is_set():
                future.cancel()
                raise self._stale_error()
            self._calls.add(future)
        try:
            return future.result()
        except grpc.RpcError as err:
            raise PserverError.from_rpc_error(err) from None
        except grpc.FutureCancelledError:
            raise self._stale_error() from None
        finally:
            with self._lock:
                self._calls.discard(future)

    def _fan_out(self, thunks):
        if len(thunks) == 1:
            thunks[0]()
            return
        futures = [self._host.executor.submit(t) for t in thunks]
        done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
        for f in futures:
            if f in done and f.exception() is not None:
                raise f.exception()
        for f in futures:
            f.result()

    def _throw_if_stale(self, shard):
        if self._aborted.is_set():
            raise self._stale_error()
        live = self._host.live_view().shards
        mine = self.view.shards[shard] if shard < len(self.view.shards) else None
        theirs = live[shard] if shard < len(live) else None
        if mine is None or theirs is None or theirs.epoch != mine.epoch or mine.epoch == 0:
            raise ClientError("CLIENT_STALE_VIEW", f"shard {shard}: the view changed since the step began")

    def _stale_error(self):
        reason = self._reason
        if isinstance(reason, ClientError):
            return reason
        return ClientError("CLIENT_STALE_VIEW", "the step must run again under a fresh view")

    def _clipped(self, grads):
        bound = self._host.global_clip_norm
        if bound is None or np is None:
            return grads
        floats = {k: np.asarray(v) for k, v in grads.items() if np.asarray(v).dtype.kind == "f"}
        norm = float(np.sqrt(sum(float(np.sum(np.square(v, dtype=np.float64))) for v in floats.values())))
        if not norm > bound:
            return grads
        scale = bound / norm
        return {k: (floats[k] * scale).astype(floats[k].dtype) if k in floats else v for k, v in grads.items()}
