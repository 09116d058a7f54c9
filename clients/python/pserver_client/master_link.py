"""Talks to the leading master among the replicas given.

A follower answers UNAVAILABLE with the leader's address in the `pserver-leader` trailer: the link
goes there. A replica that does not answer is skipped; the link tries the others, with a short
backoff, until the call's deadline.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Optional, Sequence

import grpc

from . import codes
from ._proto.pserver.v1 import master_pb2
from ._proto.pserver.v1 import master_pb2_grpc
from .errors import ClientError, PserverError, error_of
from .security import ChannelFactory

log = logging.getLogger("pserver_client")


class MasterLink:
    def __init__(self, addresses: Sequence[str], timeout_s: float = 10.0, channels: Optional[ChannelFactory] = None) -> None:
        if not addresses:
            raise ClientError(codes.CLIENT_NO_MASTER, "connect: no master address given")
        self.addresses = list(addresses)
        self.timeout_s = timeout_s
        self.channels = channels or ChannelFactory()
        self.current = self.addresses[0]
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._stubs: dict[str, Any] = {}
        self._watch_call: Any = None
        self._closed = False

    def register_trainer(self, name: str, observer: bool = False) -> Any:
        return self.call("RegisterTrainer", master_pb2.RegisterTrainerRequest(name=name, observer=observer))

    def keep_alive(self, trainer_id: int) -> Any:
        return self.call("KeepAlive", master_pb2.KeepAliveRequest(trainer_id=trainer_id))

    def unregister_trainer(self, trainer_id: int) -> Any:
        return self.call("UnregisterTrainer", master_pb2.UnregisterTrainerRequest(trainer_id=trainer_id))

    def get_cluster_view(self) -> Any:
        return self.call("GetClusterView", master_pb2.GetClusterViewRequest())

    def begin_init(self, trainer_id: int) -> Any:
        return self.call("BeginInit", master_pb2.BeginInitRequest(context={"trainer_id": trainer_id}))

    def finish_init(self, trainer_id: int) -> Any:
        return self.call("FinishInit", master_pb2.FinishInitRequest(context={"trainer_id": trainer_id}))

    def finish_job(self, trainer_id: int, trainers: int) -> Any:
        return self.call("FinishJob", master_pb2.FinishJobRequest(context={"trainer_id": trainer_id}, trainers=trainers))

    def set_dataset(self, request: Any) -> Any:
        return self.call("SetDataset", request)

    def get_task(self, trainer_id: int, pass_: int, request_id: str) -> Any:
        """`request_id` names one logical GetTask: every attempt sends it (also to a new leader),
        so one whose reply was lost is answered with the task it took."""
        request = master_pb2.GetTaskRequest(context={"trainer_id": trainer_id, "pass": pass_}, request_id=request_id)
        return self.call("GetTask", request)

    def task_finished(self, trainer_id: int, task: Any, records: int) -> Any:
        request = master_pb2.TaskFinishedRequest(
            context={"trainer_id": trainer_id, "pass": task.pass_},
            task_id=task.id,
            dispatch=task.dispatch,
            records=records,
        )
        return self.call("TaskFinished", request)

    def task_failed(self, trainer_id: int, task: Any, reason: str) -> Any:
        request = master_pb2.TaskFailedRequest(
            context={"trainer_id": trainer_id, "pass": task.pass_},
            task_id=task.id,
            dispatch=task.dispatch,
            reason=reason,
        )
        return self.call("TaskFailed", request)

    def call(self, method: str, request: Any, closed: Optional[threading.Event] = None) -> Any:
        """One unary call to the leader, following redirects and skipping dead replicas."""
        deadline = time.monotonic() + self.timeout_s
        last: Optional[PserverError] = None
        attempt = 0
        while time.monotonic() < deadline:
            if closed is not None and closed.is_set():
                raise ClientError(codes.CLIENT_CLOSED, "the client was closed")
            stub = self._stub(self.current)
            try:
                return getattr(stub, method)(request, timeout=max(0.001, deadline - time.monotonic()))
            except grpc.RpcError as raw:
                err = error_of(raw)
                if not isinstance(err, PserverError) or err.status != grpc.StatusCode.UNAVAILABLE.name:
                    raise err from None
                last = err
                self._move_on(err)
                if attempt > 0:
                    time.sleep(min(0.05 * attempt, 0.5))
                attempt += 1
        raise ClientError(
            codes.CLIENT_NO_MASTER,
            f"no master answered within {self.timeout_s} s ({', '.join(self.addresses)}): {last}",
        )

    def watch(self, on_view: Callable[[Any], None], closed: threading.Event) -> None:
        """Streams cluster views from the leader to `on_view` until `closed` is set, reconnecting
        (and following the leader) whenever the stream ends. Runs in its own thread."""
        while not closed.is_set():
            try:
                stub = self._stub(self.current)
            except ClientError:
                return  # closed
            stream = stub.WatchCluster(master_pb2.WatchClusterRequest(after_revision=0))
            with self._lock:
                self._watch_call = stream
            if closed.is_set():
                stream.cancel()
            try:
                for view in stream:
                    on_view(view)
            except grpc.RpcError as raw:
                if not closed.is_set():
                    err = PserverError.from_rpc_error(raw)
                    log.debug("master watch ended: %s", err)
                    self._move_on(err)
            except Exception:  # a bug in on_view must not end the watch silently
                log.exception("cluster view handler failed")
            closed.wait(0.1)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._watch_call is not None:
                self._watch_call.cancel()
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._stubs.clear()

    def _move_on(self, err: PserverError) -> None:
        leader = err.leader
        if leader and leader != self.current:
            nxt = leader
        else:
            i = self.addresses.index(self.current) if self.current in self.addresses else -1
            nxt = self.addresses[(i + 1) % len(self.addresses)]
        if nxt != self.current:
            log.debug("master: moving on from %s to %s (%s)", self.current, nxt, err)
        self.current = nxt

    def _stub(self, address: str) -> Any:
        with self._lock:
            if self._closed:
                raise ClientError(codes.CLIENT_CLOSED, "the client was closed")
            stub = self._stubs.get(address)
            if stub is None:
                channel = self.channels.open(address)
                self._channels[address] = channel
                stub = self._stubs[address] = master_pb2_grpc.MasterStub(channel)
            return stub
