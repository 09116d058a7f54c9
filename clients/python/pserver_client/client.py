"""`connect` and `Client`: the session, the live view, the init election and the step loop.

A trainer's connection to a job goes through the master (following its leader, with a session
kept alive and a live cluster view) or to fixed pservers (standalone). `init_params`, `step` and
`get_params` take and return whole tensors; placement, splitting into blocks, fan-out and
reassembly are the client's.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import logging
import os
import random
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence, TypeVar, Union

import grpc
from google.protobuf import json_format

from . import codes
from ._proto.pserver.v1 import master_pb2, optimizer_pb2, tensor_pb2
from .clipping import max_norm_option
from .errors import ClientError, Error, PserverError, error_of, is_refused, is_stale, whole_number
from .listing import ParamInfo
from .master_link import MasterLink
from .placement import BLOCK_SEPARATOR, DEFAULT_BLOCK_SIZE, place_tensor
from .security import ChannelFactory, TlsOptions
from .shard_calls import DEFAULT_MAX_MESSAGE_BYTES, ShardCalls
from .step_context import StepContext, backoff_s
from .step_pushes import StepPushes
from .tables import TableDirectory, TableLayout, TableLike, table_spec
from .tasks import TaskIterator
from .tensors import TensorSpec, Values, Wire, elements_of, to_wire
from .view import ShardRoute, View, changed_shards, mode_name

if TYPE_CHECKING:
    from .sparse_rows import Float32Array

T = TypeVar("T")
#: An optimizer config: an OptimizerConfig proto, or a dict of its fields, snake_case
#: ({"adam": {"weight_decay": 0.01}, "learning_rate": {"base": 1e-3}}) or proto JSON's camelCase.
OptimizerLike = Union[Mapping[str, Any], Any]

log = logging.getLogger("pserver_client")
InitDecision = master_pb2.InitDecision


def connect(
    master: Optional[Sequence[str]] = None,
    pservers: Optional[Sequence[str]] = None,
    *,
    name: Optional[str] = None,
    observer: bool = False,
    initializer: bool = True,
    trainer_id: Optional[int] = None,
    block_size: Optional[int] = None,
    global_clip_norm: Optional[float] = None,
    call_timeout_s: float = 30.0,
    step_timeout_s: float = 300.0,
    master_timeout_s: float = 10.0,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    tls: Optional[TlsOptions] = None,
    token: Optional[str] = None,
) -> Client:
    """Connects a trainer to a job: `connect(master=[...])` or `connect(pservers=[...])`.

    Options: name, observer (with a master: a client that reads and never takes steps, an
    evaluator or a tool; SYNC and SSP steps do not wait for it, default False), initializer
    (standalone: whether this trainer initializes, default True),
    trainer_id (standalone: this trainer's id, a whole number >= 1; a SYNC or SSP job counts
    trainers 1..N, the pservers' --sync-trainers, so each of its trainers gives its own and keeps
    it across restarts; default a random id; with a master, the master's), block_size
    (standalone), global_clip_norm (None; a finite number > 0: a step's float gradients scaled
    together when their L2 norm is above it, the rule of proto/README.md), call_timeout_s (30), step_timeout_s (300: a step's
    deadline, all its runs, retries and waits for a served shard included; CLIENT_STEP_FAILED only
    when it passes), master_timeout_s (10), max_message_bytes (64 MiB: the client's gRPC message
    limit both ways; reads are split into calls below it, pushes above it are streamed); tls (a
    TlsOptions: TLS to every master and pserver, with a client certificate for mutual TLS) and
    token (sent as `authorization: Bearer <token>`; needs tls). `load_security(...)` reads them
    from files.
    """
    return Client(
        master=master,
        pservers=pservers,
        name=name,
        observer=observer,
        initializer=initializer,
        trainer_id=trainer_id,
        block_size=block_size,
        global_clip_norm=global_clip_norm,
        call_timeout_s=call_timeout_s,
        step_timeout_s=step_timeout_s,
        master_timeout_s=master_timeout_s,
        max_message_bytes=max_message_bytes,
        tls=tls,
        token=token,
    )


def optimizer_config(config: Optional[OptimizerLike]) -> Any:
    """An OptimizerConfig from a proto or a dict of its fields, snake_case as in the proto
    ({"adam": {"weight_decay": 0.01}, "learning_rate": {"base": 1e-3}}) or proto JSON's camelCase
    ({"learningRate": {"base": 1e-3}}); None leaves the field unset (stored-only tensors)."""
    if config is None or isinstance(config, optimizer_pb2.OptimizerConfig):
        return config
    return json_format.ParseDict(config, optimizer_pb2.OptimizerConfig())


def dataset_request(request: Optional[Any] = None, **fields: Any) -> Any:
    """A SetDatasetRequest from a proto, a dict, or keywords, snake_case or camelCase:
    files={"globs": [...], "task_bytes": n} or records={"records": n, "task_records": k}."""
    if isinstance(request, master_pb2.SetDatasetRequest):
        return request
    return json_format.ParseDict(request or fields, master_pb2.SetDatasetRequest())


class Client:
    """A trainer's connection to a job (see `connect`)."""

    def __init__(
        self,
        master: Optional[Sequence[str]] = None,
        pservers: Optional[Sequence[str]] = None,
        name: Optional[str] = None,
        observer: bool = False,
        initializer: bool = True,
        trainer_id: Optional[int] = None,
        block_size: Optional[int] = None,
        global_clip_norm: Optional[float] = None,
        call_timeout_s: float = 30.0,
        step_timeout_s: float = 300.0,
        master_timeout_s: float = 10.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        tls: Optional[TlsOptions] = None,
        token: Optional[str] = None,
    ) -> None:
        # First: options that cannot work fail before anything is opened.
        given_id = whole_number("trainer_id", trainer_id, 1) if trainer_id is not None else None
        clip_norm = max_norm_option("global_clip_norm", global_clip_norm) if global_clip_norm is not None else None
        channels = ChannelFactory(tls, token)
        self.name = name or f"trainer-{os.getpid()}"
        #: With a master: reads and never takes steps (not in the SYNC and SSP roster).
        self.observer = observer
        #: Global-norm clipping's bound (clipping.py), or None: no clipping.
        self.global_clip_norm = clip_norm
        self.call_timeout_s = call_timeout_s
        self._initializer = initializer
        self._step_timeout_s = step_timeout_s
        self.calls = ShardCalls(max_message_bytes=max_message_bytes, channels=channels)
        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="pserver-client")
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._view_changed = threading.Condition(self._lock)
        self._contexts: set[StepContext] = set()
        self._specs: dict[str, TensorSpec] = {}
        #: The tables this client knows (declared by init_params or listed) and their routes.
        self.table_directory = TableDirectory()
        self._next_step = 0
        #: The next step's number is at least this (where the shards say this trainer goes on).
        self._step_floor = 1
        #: The trainer id the step floor was last read from every shard for (cluster SYNC and SSP).
        self._floor_for = 0
        self._threads: list[threading.Thread] = []
        #: The dataset pass steps are stamped with (tasks() sets it).
        self.pass_ = 0
        #: SYNC: the last step's pushes, until the next step went through on every shard (a shard
        #: that failed over without them asks for them again: PSERVER_RESEND_STEP).
        self.last_step_pushes: Optional[StepPushes] = None
        self._master: Optional[MasterLink] = None
        #: This trainer's id (the master's, or random standalone).
        self.trainer_id: int = 0
        self._job_finished = False
        self._view = View(0, DEFAULT_BLOCK_SIZE)
        try:
            self._connect(master, pservers, given_id, block_size, master_timeout_s, channels)
        except BaseException:
            self.close()
            raise

    def _connect(
        self,
        master: Optional[Sequence[str]],
        pservers: Optional[Sequence[str]],
        trainer_id: Optional[int],
        block_size: Optional[int],
        master_timeout_s: float,
        channels: ChannelFactory,
    ) -> None:
        if master:
            self._master = MasterLink(master, master_timeout_s, channels)
            registered = self._master.register_trainer(self.name, self.observer)
            self.trainer_id = registered.trainer_id
            self._view = View.from_proto(registered.view)
            self._start_thread(self._keep_alive, registered.session_ttl_ms, name="pserver-keepalive")
            self._start_thread(self._master.watch, self._on_view, self._closed, name="pserver-watch")
            log.info("registered with the master as trainer %d", self.trainer_id)
            return
        if not pservers:
            raise ClientError(codes.CLIENT_NO_MASTER, "connect: give master addresses or pserver addresses")
        # Standalone trainers have no registry: the id given, or a random one, unlikely to meet
        # another trainer's.
        self.trainer_id = trainer_id if trainer_id is not None else random.randint(1, 2**48)
        self._view = View(
            shard_count=len(pservers),
            block_size=block_size or DEFAULT_BLOCK_SIZE,
            shards=tuple(ShardRoute(i, a, 0, False) for i, a in enumerate(pservers)),
        )
        self.refresh_view()

    # --- the public API ---

    @property
    def view(self) -> View:
        """The cluster view as the client knows it now."""
        return self._view

    def init_params(
        self,
        tensors: Mapping[str, Values],
        optimizer: Optional[Union[OptimizerLike, Mapping[str, OptimizerLike]]] = None,
        tables: Sequence[TableLike] = (),
    ) -> None:
        """Declares the model's tensors ({name: array or Param}, each with its array's shape) and,
        if this trainer is the one chosen to (the master's init election, or `initializer`
        standalone), writes them with their optimizer (one config for all, or {name: config});
        the others wait until the parameters are initialized. "Already initialized" is success.

        Configs are protos or dicts, snake_case or camelCase. An unset learning rate is PyTorch's
        default (Adam, AdamW 1e-3; Adagrad, RMSProp 1e-2; Adadelta 1.0); plain SGD has none, so
        give `learning_rate.base` (the pserver refuses it without: OPTIMIZER_INVALID_CONFIG).

        `tables` are the job's sparse tables, each a TableSpec proto or a dict of its fields
        ({"name": "emb", "dim": 16, "initializer": {"normal": {"stddev": 0.01}}, "optimizer":
        {"adagrad": {}}}); unset buckets are 4096. Each is created on every shard (InitTable,
        before the shards finish their init). A table may not share a name with a tensor."""
        specs = [table_spec(t) for t in tables]
        for spec in specs:
            if spec.name in tensors:
                raise ClientError(
                    codes.CLIENT_UNKNOWN_TENSOR,
                    f"table {spec.name}: a tensor has the same name (they share one namespace)",
                )
        for spec in specs:
            self.table_directory.declare(TableLayout(spec.name, spec.dim, spec.buckets))
        entries: list[tuple[str, Wire]] = []
        for name, values in tensors.items():
            if BLOCK_SEPARATOR in name:
                raise ClientError(codes.CLIENT_UNKNOWN_TENSOR, f"tensor {name}: '@' is not allowed in tensor names")
            wire = to_wire(values)
            if wire.shape and elements_of(wire.shape) != wire.length:
                raise ClientError(
                    codes.CLIENT_SHAPE_MISMATCH,
                    f"tensor {name}: shape {list(wire.shape)} holds {elements_of(wire.shape)} elements, "
                    f"the values {wire.length}",
                    tensor=name,
                    expected=wire.shape,
                    actual=(wire.length,),
                )
            entries.append((name, wire))
        for name, wire in entries:
            self._specs[name] = wire.spec()
        per_tensor = isinstance(optimizer, Mapping) and bool(optimizer) and all(k in tensors for k in optimizer)
        configs = {
            name: optimizer_config(optimizer.get(name) if per_tensor and isinstance(optimizer, Mapping) else optimizer)
            for name, _ in entries
        }
        if self._master is None:
            if self._initializer:
                self._write_init(entries, configs, specs)
            return
        while True:
            decision = self._master.begin_init(self.trainer_id).decision
            if decision == InitDecision.INIT_DECISION_DONE:
                return
            if decision == InitDecision.INIT_DECISION_INITIALIZE:
                self._write_init(entries, configs, specs)
                self._master.finish_init(self.trainer_id)
                log.info("initialized the parameters")
                return
            self._sleep(0.2)  # another trainer initializes: ask again (it may die)

    def step(self, fn: Callable[[StepContext], T]) -> T:
        """Runs one training step: `fn(ctx)` gets a StepContext that captured the view, the step's
        identity (this trainer's id, the next step number, the pass) and its deadline; every call
        through it is stamped with them. If the view changes under the step, `fn` runs again
        after a short jittered backoff with a fresh context and the same identity, so shards that
        already applied its push acknowledge it as a duplicate. Each run waits until every shard
        is served. CLIENT_STEP_FAILED is raised only when the step's deadline (step_timeout_s)
        passes; errors that waiting cannot change are raised as they come. Returns what fn
        returns.

        Under SYNC or SSP (`view.consistency`), when fn returns, every shard the step did not push
        to is told the step is done (`StepContext.skip`), so that no shard waits for this
        trainer. Under SYNC the step's pushes are kept until the next step went through
        (`last_step_pushes`): a shard that failed over without them asks for them
        (PSERVER_RESEND_STEP) and gets them again."""
        # A cluster trainer learns where the job's steps are before its first one (and again under
        # a new id: a trainer registered again joins like a new one).
        if self._master is not None and self._view.consistency != "async" and self._floor_for != self.trainer_id:
            self._wait_for_complete_view(time.monotonic() + self._step_timeout_s)
            try:
                self.refresh_view()
            except Exception as err:
                if is_refused(err):
                    raise
        return self._run(fn, reading=False)

    def next_step_number(self) -> int:
        """The next step's number (never reset, also not when the session gets a new trainer id).
        Under SYNC it is at least the shards' open step, under SSP past this trainer's last step
        on any shard: a trainer that (re)starts joins where the job is."""
        with self._lock:
            self._next_step = max(self._next_step + 1, self._step_floor)
            return self._next_step

    def keep_step_pushes(self, pushes: StepPushes) -> None:
        """Keeps a step's pushes once it went through on every shard (`last_step_pushes`)."""
        self.last_step_pushes = pushes

    def step_closed_without(self, closed_steps: int) -> None:
        """SYNC: a push came too late for its step; later steps start after `closed_steps`."""
        with self._lock:
            self._step_floor = max(self._step_floor, closed_steps + 1)

    def _read(self, fn: Callable[[StepContext], T]) -> T:
        """Runs `fn` as a step of no number (0): reads and initialization, outside training."""
        return self._run(fn, reading=True)

    def _run(self, fn: Callable[[StepContext], T], reading: bool) -> T:
        # Reads take step 0: they count as no step of the trainer, and no read waits for one
        # under SYNC or SSP. The step's identity is captured once: a re-registration mid-step
        # changes trainer_id for later steps only.
        trainer_id, step, pass_ = self.trainer_id, 0 if reading else self.next_step_number(), self.pass_
        deadline = time.monotonic() + self._step_timeout_s
        last = None
        run = 0
        while time.monotonic() < deadline:
            run += 1
            if not self._wait_for_complete_view(deadline):
                break
            ctx = StepContext(self, self._view, trainer_id, step, pass_, deadline)
            with self._lock:
                self._contexts.add(ctx)
            try:
                result = fn(ctx)
                # Rows pushed without a send_grads go out now, still within this run's context.
                ctx.flush()
                # Every shard took the step: the one before can no longer be asked for. Reads
                # (step 0) are no step and replace nothing.
                if step > 0:
                    self.keep_step_pushes(ctx.sent)
                return result
            except Exception as err:
                past_deadline = isinstance(err, ClientError) and err.code == codes.CLIENT_DEADLINE_EXCEEDED
                if not (is_stale(err) or past_deadline) or self._closed.is_set():
                    raise
                last = err
            finally:
                ctx.close()
                with self._lock:
                    self._contexts.discard(ctx)
            log.info("step %d ran under a stale view (run %d: %s); running it again", step, run, last)
            self._sleep(min(backoff_s(run - 1), max(0.0, deadline - time.monotonic())))
            try:
                self.refresh_view()
            except Error as refresh_error:
                if is_refused(refresh_error):
                    raise
                last = refresh_error
        raise ClientError(
            codes.CLIENT_STEP_FAILED,
            f"step {step}: not done within {self._step_timeout_s} s ({run} runs; last: {last or 'no complete cluster view'})",
        ) from last

    def get_params(self, names: Iterable[str]) -> dict[str, Any]:
        """Reads whole tensors outside a training step (a read numbered step 0: it takes no step
        number and waits for no step under SYNC or SSP). A process that never initialized the
        model reads it by name: the client lists it first."""
        names = list(names)
        return self._read(lambda ctx: ctx.get_params(names))

    def lookup(self, table: str, ids: Any) -> Float32Array:
        """Reads rows of a table outside a training step (a read numbered step 0, as get_params): a
        float32 array of shape (len(ids), dim), as StepContext.lookup."""
        return self._read(lambda ctx: ctx.lookup(table, ids))

    def tables(self) -> dict[str, TableLayout]:
        """The job's sparse tables, {name: TableLayout(name, dim, buckets)}, as declared at
        init_params or listed from the shards; lists the model when the client knows none."""
        if not self.table_directory.all():
            self._read(lambda ctx: ctx.list_params())
        return self.table_directory.all()

    def list_params(self) -> dict[str, ParamInfo]:
        """The model as the shards hold it, {name: ParamInfo(element_type, shape, length,
        optimizer)}, from ListParams on every shard (it waits for initialization, as reads do).
        For a process that attaches to a model others initialized (an evaluator, an exporter);
        afterwards get_params reads every listed tensor."""
        return self._read(lambda ctx: ctx.list_params())

    def finish_job(self, trainers: int = 0) -> bool:
        """Says this trainer is done with the job, which finishes once `trainers` trainers (this
        one included, each counted once by name) said so; 0 or 1: at once. A finished job's
        pservers commit a final checkpoint and exit: read what you need first. Returns whether the
        job is finished now."""
        trainers = whole_number("trainers", trainers, 0)
        finished = bool(self._require_master("finish_job").finish_job(self.trainer_id, trainers).finished)
        # A finished job's masters leave once its pservers have: close() does not wait on them.
        self._job_finished = self._job_finished or finished
        return finished

    def set_dataset(self, request: Optional[Any] = None, **fields: Any) -> Any:
        """Sets the job's dataset: a SetDatasetRequest, a dict, or keywords, snake_case or
        camelCase (files={"globs": [...], "task_bytes": n} or records={"records": n,
        "task_records": k}). Only the first call counts; the same dataset again is acknowledged
        (already_set). Returns the SetDatasetResponse."""
        master = self._require_master("set_dataset")
        return master.set_dataset(dataset_request(request, **fields))

    def tasks(self, pass_: int) -> TaskIterator:
        """The dataset's tasks for this trainer in `pass_`, until the pass is over; steps taken
        meanwhile are stamped with the pass. A task is reported finished when the loop moves on,
        failed when the body raises or breaks out."""
        self._require_master("tasks")
        self.pass_ = pass_
        return TaskIterator(self, pass_)

    def close(self) -> None:
        """Ends the session (the master frees this trainer's tasks at once) and closes every
        connection; the background threads stop."""
        if self._closed.is_set():
            return
        self._closed.set()
        closed = ClientError(codes.CLIENT_CLOSED, "the client was closed")
        with self._lock:
            contexts = list(self._contexts)
            self._view_changed.notify_all()
        for ctx in contexts:
            ctx.abort(closed)
        if self._master is not None and self.trainer_id and not self._job_finished:
            try:
                self._master.call(
                    "UnregisterTrainer", master_pb2.UnregisterTrainerRequest(trainer_id=self.trainer_id)
                )
            except Error as err:
                log.debug("unregister failed: %s", err)
        if self._master is not None:
            self._master.close()
        self.calls.close()
        for thread in self._threads:
            thread.join(timeout=5)
        self.executor.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what step contexts need ---

    def known(self, name: str) -> Optional[TensorSpec]:
        return self._specs.get(name)

    def spec(self, name: str) -> TensorSpec:
        spec = self._specs.get(name)
        if spec is None:
            raise ClientError(
                codes.CLIENT_UNKNOWN_TENSOR,
                f"tensor {name}: not in the model (neither declared by init_params nor listed by the shards)",
            )
        return spec

    def learn(self, specs: Mapping[str, TensorSpec]) -> None:
        """Tensors listed by the shards; those this client declared itself stay as declared."""
        with self._lock:
            for name, spec in specs.items():
                self._specs.setdefault(name, spec)

    def live_view(self) -> View:
        return self._view

    def stale_shard(self, index: int, epoch: Optional[int]) -> None:
        """A shard answered ABORTED. Standalone, its trailer tells the new epoch; with a master,
        the refresh before the next run gets it."""
        if self._master is not None or epoch is None:
            return
        # It answered, so it serves.
        shards = tuple(
            ShardRoute(s.index, s.address, epoch, True) if s.index == index else s for s in self._view.shards
        )
        self._apply_view(dataclasses.replace(self._view, shards=shards, revision=self._view.revision + 1))

    def refresh_view(self) -> None:
        """Gets the current view: from the master, or standalone from each pserver's status. Under
        SYNC and SSP the shards' statuses also say where this trainer's steps go on."""
        if self._master is not None:
            view = View.from_proto(self._master.get_cluster_view())
            self._apply_view(view)
            if view.consistency != "async" and view.complete():
                trainer_id = self.trainer_id
                statuses = self._statuses(view)
                if all(s is not None for s in statuses):
                    self._raise_step_floor(view.consistency, statuses)
                    self._floor_for = trainer_id
            return
        v = self._view
        statuses = self._statuses(v)
        # A pserver answers its status only once it serves (recovering: PSERVER_NOT_SERVING).
        shards = [
            ShardRoute(s.index, s.address, status.shard_epoch, True)
            if status is not None
            else ShardRoute(s.index, s.address, 0, False)  # not serving (yet): the view stays incomplete
            for s, status in zip(v.shards, statuses)
        ]
        answered = [s for s in statuses if s is not None]
        consistency = consistency_of(answered) or v.consistency
        if answered and len(answered) == len(shards):
            self._raise_step_floor(consistency, answered)
        self._apply_view(dataclasses.replace(v, shards=tuple(shards), revision=v.revision + 1, consistency=consistency))

    # --- internals ---

    def _statuses(self, view: View) -> list[Any]:
        """Each shard's status with this trainer's last step on it; None where none answered."""
        statuses: list[Any] = []
        for s in view.shards:
            try:
                statuses.append(self.calls.status(s.address, self.call_timeout_s, self.trainer_id).result())
            except grpc.RpcError as raw:
                err = error_of(raw)
                if is_refused(err):  # not a pserver still starting: this client may not call it
                    raise err from None
                statuses.append(None)
            except Exception:  # not serving (yet)
                statuses.append(None)
        return statuses

    def _raise_step_floor(self, consistency: str, statuses: Sequence[Any]) -> None:
        """Where this trainer goes on, from every shard's status: SYNC at the open step of the
        shard furthest behind (its step may still wait for this trainer), SSP past its last step
        anywhere and never below the slowest member's clock (a trainer that joins a running job
        starts there)."""
        if consistency == "sync":
            floor = min(s.version for s in statuses) + 1
        elif consistency == "ssp":
            floor = max(max(s.trainer_last_step, s.min_clock) for s in statuses) + 1
        else:
            return
        with self._lock:
            self._step_floor = max(self._step_floor, floor)

    def _on_view(self, proto_view: Any) -> None:
        self._apply_view(View.from_proto(proto_view))

    def _apply_view(self, nxt: View) -> None:
        with self._lock:
            if nxt.revision < self._view.revision:
                return
            changed = changed_shards(self._view, nxt)
            self._view = nxt
            stale = [c for c in self._contexts if changed and c.uses_changed(changed)]
            self._view_changed.notify_all()
        if changed:
            log.info("cluster view changed: shards %s (revision %d)", changed, nxt.revision)
            for ctx in stale:
                ctx.abort(ClientError(codes.CLIENT_STALE_VIEW, f"shards {changed} changed"))

    def _wait_for_complete_view(self, deadline: float) -> bool:
        """Waits until every shard is assigned and served (True), or `deadline` passes (False).
        The master's watch wakes it on every new view; standalone, it polls the pservers."""
        while not self._view.complete():
            self._check_open()
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with self._lock:
                self._view_changed.wait(min(0.5, left))
            if self._master is None or not self._view.complete():
                try:
                    self.refresh_view()
                except Error as err:
                    if is_refused(err):
                        raise
        self._check_open()
        return True

    def _keep_alive(self, ttl_ms: int) -> None:
        interval = max(0.1, ttl_ms / 3000)
        master = self._master
        assert master is not None
        while not self._closed.wait(interval):
            try:
                master.keep_alive(self.trainer_id)
            except PserverError as err:
                if err.code != codes.MASTER_SESSION_EXPIRED:
                    log.info("keep-alive failed: %s", err)
                    continue
                try:
                    registered = master.register_trainer(self.name, self.observer)
                except Error as again:
                    log.warning("could not register again: %s", again)
                    continue
                log.warning(
                    "the session had ended; registered again as trainer %d (was %d)",
                    registered.trainer_id,
                    self.trainer_id,
                )
                self.trainer_id = registered.trainer_id
            except Error as err:
                log.info("keep-alive failed: %s", err)

    def _write_init(
        self, entries: Sequence[tuple[str, Wire]], configs: Mapping[str, Any], tables: Sequence[Any] = ()
    ) -> None:
        """Writes every block with its optimizer and every table on every shard, then finishes
        every shard, in one step (so a shard replaced meanwhile gets the whole write again)."""

        def fn(ctx: StepContext) -> None:
            def init_block(name: str, wire: Wire, block: Any) -> None:
                param = tensor_pb2.Tensor(
                    name=block.name,
                    element_type=wire.element_type,
                    shape=wire.shape,
                    content=bytes(wire.block(block.start, block.end)),
                )
                ctx.with_retries(
                    block.shard,
                    lambda address, context, timeout: _Tolerant(
                        self.calls.init_param(address, context, param, configs[name], timeout)
                    ),
                )

            def init_table(shard: int, spec: Any) -> None:
                ctx.with_retries(
                    shard,
                    lambda address, context, timeout: _Tolerant(
                        self.calls.init_table(address, context, spec, timeout)
                    ),
                )

            def finish(shard: int) -> None:
                ctx.with_retries(
                    shard,
                    lambda address, context, timeout: _Tolerant(
                        self.calls.finish_init_params(address, context, timeout)
                    ),
                )

            view = ctx.view
            ctx._fan_out(
                [
                    functools.partial(init_block, name, wire, block)
                    for name, wire in entries
                    for block in place_tensor(name, wire.length, view.block_size, view.shard_count)
                ]
            )
            # Every shard holds some of a table's buckets: each gets the table.
            ctx._fan_out([functools.partial(init_table, s.index, spec) for spec in tables for s in view.shards])
            ctx._fan_out([functools.partial(finish, s.index) for s in view.shards])

        self._read(fn)

    def _require_master(self, what: str) -> MasterLink:
        if self._master is None:
            raise ClientError(codes.CLIENT_NO_MASTER, f"{what}: needs a master (standalone pservers have no dataset and no job to finish); connect with master=[...]")
        return self._master

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise ClientError(codes.CLIENT_CLOSED, "the client was closed")

    def _sleep(self, seconds: float) -> None:
        """Waits, but ends at once (CLIENT_CLOSED) when the client is closed."""
        if self._closed.wait(seconds):
            raise ClientError(codes.CLIENT_CLOSED, "the client was closed")

    def _start_thread(self, target: Callable[..., None], *args: Any, name: str) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)


def consistency_of(statuses: Sequence[Any]) -> Optional[str]:
    """The job's mode as the shards' statuses report it (None without any); they must agree (they
    are started with one), else CLIENT_INVALID_OPTIONS."""
    modes = sorted({mode_name(s.consistency.mode) for s in statuses})
    if len(modes) > 1:
        raise ClientError(
            codes.CLIENT_INVALID_OPTIONS,
            f"the pservers run different consistency modes ({', '.join(modes)}): "
            "start every shard with the same --consistency",
        )
    return modes[0] if modes else None



class _Tolerant:
    """A future whose PSERVER_ALREADY_INITIALIZED failure counts as success (the parameters are
    there: another trainer, or an earlier run of this one, wrote them)."""

    def __init__(self, future: Any) -> None:
        self._future = future

    def cancel(self) -> bool:
        return bool(self._future.cancel())

    def result(self) -> Any:
        try:
            return self._future.result()
        except grpc.RpcError as err:
            if PserverError.from_rpc_error(err).code == codes.PSERVER_ALREADY_INITIALIZED:
                return None
            raise
