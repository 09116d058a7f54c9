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

from __future__ import annotations

import concurrent.futures
import functools
import logging
import random
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence

import grpc

from . import codes
from ._proto.pserver.v1 import context_pb2, tensor_pb2
from .errors import (
    ClientError,
    Error,
    PserverError,
    error_of,
    is_resend_step,
    is_retryable,
    is_shard_unavailable,
    is_stale,
    whole_number,
)
from .listing import ParamInfo, assemble
from .placement import place_tensor
from .push_report import DROPPED_LATE, PushReport, ShardPush
from .shard_calls import TENSOR_OVERHEAD_BYTES, REQUEST_OVERHEAD_BYTES
from .sparse_rows import RowStage, as_ids, check_rows, distinct_ids, group_by_shard, scatter_rows
from .step_pushes import SentPush, StepPushes
from .tables import TableLayout
from .clipping import clip_by_global_norm
from .tensors import TensorSpec, Values, from_wire, to_wire
from .view import View

if TYPE_CHECKING:
    from .client import Client
    from .sparse_rows import Float32Array

log = logging.getLogger("pserver_client")

#: A call against a shard: (address, RequestContext, timeout_s) → a grpc future.
ShardCall = Callable[[str, Any, float], Any]


def backoff_s(attempt: int, base: float = 0.05, cap: float = 1.0) -> float:
    """Exponential backoff with full jitter, capped at 1 s so that a client waiting out a failover
    notices within about a second that the shard serves again."""
    return random.random() * min(cap, base * 2.0**attempt)


class _Block:
    """One block (or a tensor stored whole) to read: where its bytes go in the tensor's buffer."""

    __slots__ = ("name", "tensor", "offset", "size")

    def __init__(self, name: str, tensor: str, offset: int, size: int) -> None:
        self.name, self.tensor, self.offset, self.size = name, tensor, offset, size


class StepContext:
    def __init__(self, host: Client, view: View, trainer_id: int, step: int, pass_: int, deadline: float) -> None:
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
        self._reason: Optional[BaseException] = None
        self._lock = threading.Lock()
        self._calls: set[Any] = set()
        #: Row gradients given to push_rows, by table, until the step's push takes them.
        self._staged = RowStage()
        #: Whether the step's push went out (rows given later could not join it).
        self._pushed = False
        #: The shards the step pushed to (skip tells the others), and the version each answered.
        self._pushed_to: dict[int, int] = {}
        #: Whether a shard answered DROPPED_LATE: its step closed without this trainer.
        self._dropped_late = False
        #: SYNC: what the step sent to each shard, kept once the step is done (the client's
        #: `last_step_pushes`).
        self.sent = StepPushes(trainer_id, step, pass_, view.shard_count)

    # --- lifecycle (used by the client) ---

    def abort(self, reason: BaseException) -> None:
        """Ends the context: its calls in flight are cancelled and later ones refused."""
        with self._lock:
            if self._reason is None:
                self._reason = reason
            self._aborted.set()
            calls = list(self._calls)
        for call in calls:
            call.cancel()

    def close(self) -> None:
        """The step is over: calls still running for it (after another call failed) stop."""
        self.abort(ClientError(codes.CLIENT_STALE_VIEW, f"step {self.step}: this run is over"))

    def uses_changed(self, changed: Sequence[int]) -> bool:
        return any(i < len(self.view.shards) for i in changed)

    # --- what fn calls ---

    def get_params(self, names: Iterable[str]) -> dict[str, Any]:
        """The current values of whole tensors: blocks fetched from their shards (shards in
        parallel, each in calls whose replies stay well below the message limit) and reassembled.
        A tensor the client does not know yet (it never initialized the model) is looked up with
        list_params first. Returns {name: array}, each reshaped to its tensor's shape."""
        names = list(names)
        specs = self._specs(names)
        buffers = {name: bytearray(spec.length * spec.element_size()) for name, spec in specs.items()}
        by_shard: dict[int, list[_Block]] = {}
        for name, spec in specs.items():
            size = spec.element_size()
            for block in place_tensor(name, spec.length, self.view.block_size, self.view.shard_count):
                by_shard.setdefault(block.shard, []).append(
                    _Block(block.name, name, block.start * size, (block.end - block.start) * size)
                )
        batches = {shard: self._batches(blocks) for shard, blocks in by_shard.items()}

        def fetch(shard: int, batch: list[_Block]) -> None:
            try:
                reply = self.with_retries(
                    shard,
                    lambda address, context, timeout: self._host.calls.get_params(
                        address, context, [b.name for b in batch], timeout
                    ),
                )
            except PserverError as err:
                if err.code != codes.PSERVER_REPLY_TOO_LARGE:
                    raise
                if len(batch) == 1:  # the server's limit is below one block
                    raise self._too_large(batch[0], f"the pserver's limit: {err.details}") from err
                half = len(batch) // 2
                fetch(shard, batch[:half])
                fetch(shard, batch[half:])
                return
            for block, param in zip(batch, reply.params):
                buffers[block.tensor][block.offset : block.offset + len(param.content)] = param.content

        def fetch_shard(shard: int) -> None:
            # One call at a time per shard: a pserver answers them one after the other anyway,
            # and the replies in memory stay at one per shard.
            for batch in batches[shard]:
                fetch(shard, batch)

        self._fan_out([functools.partial(fetch_shard, s) for s in batches])
        return {name: from_wire(buffers[name], spec.element_type, spec.shape) for name, spec in specs.items()}

    def list_params(self) -> dict[str, ParamInfo]:
        """The model as the shards hold it ({name: ParamInfo}), from ListParams on every shard.
        The client then knows every listed tensor (get_params and send_grads take them)."""
        replies: list[Any] = [None] * self.view.shard_count

        def list_shard(shard: int) -> None:
            replies[shard] = self.with_retries(
                shard, lambda address, context, timeout: self._host.calls.list_params(address, context, timeout)
            )

        self._fan_out([functools.partial(list_shard, s.index) for s in self.view.shards])
        model = assemble((p for reply in replies for p in reply.params), self.view.block_size)
        self._host.learn({name: info.spec() for name, info in model.items()})
        self._host.table_directory.learn(t for reply in replies for t in reply.tables)
        return model

    def lookup(self, table: str, ids: Any) -> Float32Array:
        """The rows of `ids` (a 1-D integer numpy array or a sequence of ints, each a signed
        64-bit id) in table `table`: a float32 array of shape (len(ids), dim) in the order of
        `ids`, duplicates included. Each distinct id is read once: the ids are grouped by shard
        (bucket, then the view's bucket → shard array), one GetRows per shard in parallel, split
        into calls whose replies stay under half the message limit (one after another per shard),
        and the rows scattered back. An id without a row reads as the table's pull_missing says
        (its init value by default). A table the client does not know is learned by listing the
        model first."""
        import numpy as np

        layout = self._table(table)
        id_array = as_ids(ids, f"lookup of table {table}")
        dim = layout.dim
        distinct = distinct_ids(id_array)
        groups = group_by_shard(
            distinct.ids, layout, self._host.table_directory.shards_of(layout, self.view.shard_count)
        )
        rows = np.zeros((distinct.count, dim), dtype=np.float32)
        per_call = self._host.calls.rows_per_call(dim)

        def fetch_shard(shard: int, indices: Any) -> None:
            shard_ids = distinct.ids[indices]
            for start in range(0, len(indices), per_call):
                part = shard_ids[start : start + per_call]
                reply = self.with_retries(
                    shard,
                    lambda address, context, timeout: self._host.calls.get_rows(
                        address, context, table, part.tobytes(), timeout
                    ),
                )
                if len(reply.values) != len(part) * dim * 4:
                    raise ClientError(
                        codes.CLIENT_SHAPE_MISMATCH,
                        f"table {table}: shard {shard} answered {len(reply.values)} bytes for "
                        f"{len(part)} rows of dim {dim}",
                    )
                rows[indices[start : start + len(part)]] = np.frombuffer(reply.values, dtype="<f4").reshape(-1, dim)

        self._fan_out([functools.partial(fetch_shard, s, i) for s, i in groups.items()])
        return scatter_rows(distinct, rows)

    def push_rows(self, table: str, ids: Any, grads: Any, counts: Any = None) -> None:
        """Adds row gradients of table `table` to the step's push: `grads` holds len(ids) × dim
        float32 values (shape (len(ids), dim), or flat), row i for ids[i]; `counts`, if given, the
        occurrences of each id in the batch (the table's admission counts them; 1 each
        otherwise). Lengths are checked at once (CLIENT_SHAPE_MISMATCH); the arrays are copied.
        Duplicate ids, within a call and across calls, are summed in order of first appearance
        (float32 arithmetic). The rows go out with the step's push — in the same SendGrads as
        send_grads's dense gradients for each shard, or by themselves when the step function
        returns — so a shard applies a step's dense and sparse gradients together, once. Call it
        before send_grads: rows given after the push went out are CLIENT_STEP_FAILED."""
        layout = self._table(table)
        rows = check_rows(layout, ids, grads, counts)
        if self._pushed:
            raise ClientError(
                codes.CLIENT_STEP_FAILED,
                f"step {self.step}: rows of table {table} given after the step's push was sent "
                "(a second push of the step would be a duplicate): call push_rows before send_grads",
            )
        self._staged.add(table, rows)

    def flush(self) -> None:
        """When the step function returned: sends the rows push_rows staged if send_grads did
        not, and under SYNC or SSP tells every shard the step did not push to that this trainer's
        step is done (skip), so that no shard waits for it."""
        if not self._staged.empty and not self._pushed:
            self._push({})
        if self.view.consistency != "async" and self.step > 0:
            self.skip()
        # A late trainer goes on at the first step some shard still waits for: never past one
        # that has not closed yet (a shard restored behind the job answers late while the others
        # still wait for this trainer's next steps).
        if self._dropped_late and len(self._pushed_to) == len(self.view.shards):
            self._host.step_closed_without(min(self._pushed_to.values()))

    def skip(self) -> PushReport:
        """Says this trainer has nothing for the step (its data ran out) on every shard it did not
        push to yet: a push with no gradients and a sample count of 0. Under SYNC the step closes
        without waiting for it and without its weight; under SSP its clock moves; nothing changes
        under ASYNC. `Client.step` calls it when the step function returns (SYNC, SSP). Rows
        staged by push_rows and not sent yet cannot go with it: CLIENT_STEP_FAILED."""
        if not self._staged.empty:
            raise ClientError(
                codes.CLIENT_STEP_FAILED,
                f"step {self.step}: skip with rows staged by push_rows (a push of 0 samples carries no "
                "gradients): send them with send_grads first",
            )
        rest = [s.index for s in self.view.shards if s.index not in self._pushed_to]
        return self._push({shard: [] for shard in rest}, 0)

    def send_grads(self, grads: Mapping[str, Values], sample_count: Optional[int] = None) -> PushReport:
        """Pushes the step's gradients ({name: array}): clipped by global norm if configured,
        split into blocks, sent as one push per shard in parallel, each retried with the same step
        until it is known applied (a retry of an applied push is acknowledged as a duplicate).
        A numpy gradient's shape must be its tensor's (a flat buffer, array.array or 1-D
        memoryview, only its element count): else CLIENT_SHAPE_MISMATCH, before anything is
        sent. The shape travels with the push; the pserver checks it too.

        `sample_count`: the examples the gradients came from, the push's weight in a SYNC step's
        mean (unset: 1); a whole number >= 1 (a step without data calls skip() instead), else
        CLIENT_INVALID_OPTIONS. Returns the push report: per shard pushed to, its outcome and
        version."""
        if sample_count is not None:
            sample_count = whole_number("sample_count", sample_count, 1, " (a step without data calls skip())")
        specs = self._specs(list(grads))
        wires = {name: _gradient(name, values, specs[name]) for name, values in grads.items()}
        if self._host.global_clip_norm is not None:
            wires = clip_by_global_norm(wires, self._host.global_clip_norm)
        by_shard: dict[int, list[Any]] = {}
        for name, wire in wires.items():
            spec = specs[name]
            shape = wire.shape if wire.shaped else spec.shape
            for block in place_tensor(name, spec.length, self.view.block_size, self.view.shard_count):
                by_shard.setdefault(block.shard, []).append(
                    tensor_pb2.Tensor(
                        name=block.name,
                        element_type=wire.element_type,
                        shape=shape,
                        content=bytes(wire.block(block.start, block.end)),
                    )
                )
        return self._push(by_shard, sample_count)

    def _push(self, dense: Mapping[int, list[Any]], sample_count: Optional[int] = None) -> PushReport:
        """The step's push: per shard one SendGrads with its dense blocks and the staged row
        gradients of its buckets (one SparseGrad per table), in parallel, each retried until known
        applied."""
        sparse = self._staged.take(self._host.table_directory, self.view.shard_count) if not self._staged.empty else {}
        shards = sorted(set(dense) | set(sparse))
        if shards:
            self._pushed = True
        self._pushed_to.update((shard, 0) for shard in shards)
        outgoing = {shard: SentPush(dense.get(shard, []), sparse.get(shard, []), sample_count) for shard in shards}
        if self.view.consistency == "sync":
            for shard in shards:
                self.sent.record(shard, outgoing[shard])
        outcomes: dict[int, ShardPush] = {}

        def push(shard: int) -> None:
            reply = self.with_retries(shard, self._send(outgoing[shard]))
            outcomes[shard] = ShardPush.from_reply(shard, reply)
            self._pushed_to[shard] = reply.version
            if outcomes[shard].outcome == DROPPED_LATE:
                self._dropped_late = True

        self._fan_out([functools.partial(push, s) for s in shards])
        return PushReport([outcomes[s] for s in shards])

    def _send(self, push: SentPush) -> ShardCall:
        """The SendGrads call of `push`."""
        return lambda address, context, timeout: self._host.calls.send_grads(
            address, context, push.dense, timeout, push.sparse, push.sample_count
        )

    def _resend_last_step(self, shard: int) -> None:
        """SYNC: sends this trainer's push of the step before to `shard` again — the shard failed
        over without it and asked (PSERVER_RESEND_STEP) — with what the client kept (placed anew if
        the shard count changed since), under the identity that step had and the shard's epoch in
        this context's view. A trainer that took no part in that step there (it joined after, or
        has a new id) says so with a zero-sample push. The re-send's outcome (accumulated,
        duplicate, dropped late) does not matter: the shard holds the step from then on."""
        step = self.step - 1
        kept = self._host.last_step_pushes
        push = None
        if kept is not None:
            push = kept.sent_to(
                shard, self.trainer_id, step, shard_count=self.view.shard_count, tables=self._host.table_directory
            )
        log.info(
            "shard %d failed over without the last step: sending step %d again (%s)",
            shard,
            step,
            "the pushed bytes kept" if push is not None else "none kept: a push of 0 samples",
        )
        pass_ = kept.pass_ if kept is not None and push is not None else self.pass_
        send = self._send(push if push is not None else SentPush((), (), 0))
        self.with_retries(
            shard,
            lambda address, context, timeout: send(address, _restamped(context, step, pass_), timeout),
            resend=False,
        )

    def request_context(self, shard: int) -> Any:
        """The RequestContext of a call to `shard`: this context's own view and the step's identity."""
        route = self.view.shards[shard] if shard < len(self.view.shards) else None
        return context_pb2.RequestContext(
            trainer_id=self.trainer_id,
            step=self.step,
            shard_epoch=route.epoch if route else 0,
            **{"pass": self.pass_},
        )

    def with_retries(self, shard: int, call: ShardCall, resend: bool = True) -> Any:
        """Runs `call(address, context, timeout)` (returning a grpc future) against `shard`,
        retrying while its outcome is unknown (connection lost, deadline), the pserver is busy
        (after its retry hint) or the shard is not served at the address for now (recovering,
        fenced, shutting down: until it serves or a new view aborts the context). Retries back off
        with jitter and end with the step's deadline. A moved epoch ends the step (stale view).
        Errors that waiting cannot change (bad input, a message over the size limit) are raised
        at once. A SYNC shard that failed over without this trainer's last step asks for it
        (PSERVER_RESEND_STEP): it is sent again (`resend`: not for a re-send itself), then the
        call; a second such answer to the call is raised."""
        attempt = 0
        resent = False
        while True:
            self._throw_if_stale(shard)
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise ClientError(codes.CLIENT_DEADLINE_EXCEEDED, f"step {self.step}: not done in time")
            route = self.view.shards[shard]
            try:
                return self._wait(call(route.address, self.request_context(shard), min(self._host.call_timeout_s, left)))
            except PserverError as err:
                if self._aborted.is_set():
                    raise self._stale_error() from err
                if is_stale(err):
                    self._host.stale_shard(shard, err.shard_epoch)
                    raise ClientError(codes.CLIENT_STALE_VIEW, f"shard {shard}: {err}") from err
                # Asked once per call: the shard holds the step from then on.
                if is_resend_step(err) and resend and not resent:
                    resent = True
                    self._resend_last_step(shard)
                    continue
                if not is_retryable(err) and not is_shard_unavailable(err):
                    raise
                hint = err.retry_after_ms / 1000 if err.retry_after_ms is not None else backoff_s(attempt)
                attempt += 1
                if self._aborted.wait(min(hint, max(0.0, self.deadline - time.monotonic()))):
                    raise self._stale_error() from err

    # --- internals ---

    def _specs(self, names: Sequence[str]) -> dict[str, TensorSpec]:
        """The specs of `names`; a name the client does not know makes it list the model first
        (a process that attached to a model others initialized)."""
        if any(self._host.known(name) is None for name in names):
            self.list_params()
        return {name: self._host.spec(name) for name in names}

    def _table(self, name: str) -> TableLayout:
        """The table's layout, listing the model first when the client does not know the table."""
        if self._host.table_directory.get(name) is None:
            self.list_params()
        layout = self._host.table_directory.get(name)
        if layout is None:
            raise ClientError(
                codes.CLIENT_UNKNOWN_TENSOR,
                f"table {name}: no shard holds it (neither declared by init_params nor listed by the shards)",
            )
        return layout

    def _batches(self, blocks: list[_Block]) -> list[list[_Block]]:
        """One shard's blocks in GetParams calls whose replies carry at most the reply budget of
        content (a block larger than the budget alone). A block over the message limit itself
        cannot be read: CLIENT_MESSAGE_TOO_LARGE, before anything is sent."""
        calls = self._host.calls
        budget = calls.reply_budget_bytes()
        batches: list[list[_Block]] = []
        current: list[_Block] = []
        used = 0
        for block in blocks:
            cost = block.size + TENSOR_OVERHEAD_BYTES
            if cost + REQUEST_OVERHEAD_BYTES > calls.max_message_bytes:
                raise self._too_large(block, f"the client's limit is {calls.max_message_bytes} bytes")
            if current and used + cost > budget:
                batches.append(current)
                current, used = [], 0
            current.append(block)
            used += cost
        if current:
            batches.append(current)
        return batches

    def _too_large(self, block: _Block, limit: str) -> ClientError:
        return ClientError(
            codes.CLIENT_MESSAGE_TOO_LARGE,
            f"block {block.name} of {block.tensor} ({block.size} bytes) does not fit in one message ({limit}): "
            "raise connect(max_message_bytes=) and the pserver's --max-message-mb, or lower the job's block size",
        )

    def _wait(self, future: Any) -> Any:
        with self._lock:
            if self._aborted.is_set():
                future.cancel()
                raise self._stale_error()
            self._calls.add(future)
        try:
            return future.result()
        except grpc.RpcError as err:
            raise error_of(err) from None
        except grpc.FutureCancelledError:
            raise self._stale_error() from None
        finally:
            with self._lock:
                self._calls.discard(future)

    def _fan_out(self, thunks: Sequence[Callable[[], None]]) -> None:
        if len(thunks) == 1:
            thunks[0]()
            return
        futures = [self._host.executor.submit(t) for t in thunks]
        done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_EXCEPTION)
        for f in futures:
            failure = f.exception() if f in done else None
            if failure is not None:
                raise failure
        for f in futures:
            f.result()

    def _throw_if_stale(self, shard: int) -> None:
        if self._aborted.is_set():
            raise self._stale_error()
        live = self._host.live_view().shards
        mine = self.view.shards[shard] if shard < len(self.view.shards) else None
        theirs = live[shard] if shard < len(live) else None
        if mine is None or theirs is None or theirs.epoch != mine.epoch or mine.epoch == 0:
            raise ClientError(codes.CLIENT_STALE_VIEW, f"shard {shard}: the view changed since the step began")

    def _stale_error(self) -> Error:
        reason = self._reason
        if isinstance(reason, ClientError):
            return reason
        return ClientError(codes.CLIENT_STALE_VIEW, "the step must run again under a fresh view")


def _restamped(context: Any, step: int, pass_: int) -> Any:
    """`context` (a call's RequestContext: the trainer id, the shard's epoch) for another step."""
    return context_pb2.RequestContext(
        trainer_id=context.trainer_id, step=step, shard_epoch=context.shard_epoch, **{"pass": pass_}
    )


def _gradient(name: str, values: Values, spec: TensorSpec) -> Any:
    """A gradient in wire form, checked against its tensor: the same element type, element count
    and (for values with a shape of their own) shape; else CLIENT_SHAPE_MISMATCH."""
    try:
        wire = to_wire(values)
    except TypeError:
        wire = to_wire(values, spec.element_type)  # raw bits (bfloat16) of the tensor's type
    if wire.element_type != spec.element_type:
        raise ClientError(
            codes.CLIENT_SHAPE_MISMATCH,
            f"gradient {name}: element type {_type_name(wire.element_type)}, the tensor's is {_type_name(spec.element_type)}",
            tensor=name,
            expected=spec.shape,
            actual=wire.shape,
        )
    flat_fits = not spec.shape and wire.shape == (spec.length,)
    if wire.length != spec.length or (wire.shaped and wire.shape != spec.shape and not flat_fits):
        raise ClientError(
            codes.CLIENT_SHAPE_MISMATCH,
            f"gradient {name}: shape {list(wire.shape)} ({wire.length} elements), "
            f"the tensor's is {list(spec.shape)} ({spec.length} elements)",
            tensor=name,
            expected=spec.shape,
            actual=wire.shape,
        )
    return wire


def _type_name(value: int) -> str:
    return str(tensor_pb2.ElementType.Name(value)).replace("ELEMENT_TYPE_", "")
