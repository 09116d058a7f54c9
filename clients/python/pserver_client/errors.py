"""Typed errors: a failed RPC never escapes as a raw grpc.RpcError.

Server errors become `PserverError` (gRPC status name, the domain code from the
`pserver-error-code` trailer, facts from the other trailers); the client's own conditions become
`ClientError` with a `CLIENT_*` code. Codes are the names of proto/pserver/v1/errors.proto's
`ErrorCode` (constants in `pserver_client.codes`). Callers branch on codes and on the predicates
below, never on message text; the predicates are the actions of the contract's error rules
(proto/testdata/error_codes.json, generated into `_proto.error_rules`).
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple, TypeVar

import grpc

from . import codes
from ._proto import error_rules

ERROR_CODE_KEY = "pserver-error-code"
SHARD_EPOCH_KEY = "pserver-shard-epoch"
LEADER_KEY = "pserver-leader"
RETRY_AFTER_MS_KEY = "pserver-retry-after-ms"

T = TypeVar("T")


class Error(Exception):
    """Base of every error the client raises."""

    #: The error's code: an `ErrorCode` name (`pserver_client.codes`), or None.
    code: Optional[str]


class PserverError(Error):
    """A call that a master or pserver answered with an error (or that never got an answer)."""

    def __init__(
        self,
        status: str,
        message: str,
        code: Optional[str] = None,
        shard_epoch: Optional[int] = None,
        leader: Optional[str] = None,
        retry_after_ms: Optional[int] = None,
    ) -> None:
        super().__init__(f"{status}{' ' + code if code else ''}: {message}")
        #: The gRPC status code's name, e.g. "INVALID_ARGUMENT".
        self.status = status
        #: The domain code from the `pserver-error-code` trailer, or None (transport errors).
        self.code = code
        self.details = message
        #: The shard's current epoch (`pserver-shard-epoch`, sent with ABORTED).
        self.shard_epoch = shard_epoch
        #: The leading master's address (`pserver-leader`, sent with UNAVAILABLE by followers).
        self.leader = leader
        #: How long to wait before retrying (`pserver-retry-after-ms`, with RESOURCE_EXHAUSTED).
        self.retry_after_ms = retry_after_ms

    @classmethod
    def from_rpc_error(cls, err: grpc.RpcError) -> PserverError:
        """Converts a grpc.RpcError (from a stub call or a future) into a PserverError."""
        status = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
        trailers: dict[str, str] = {}
        metadata = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
        for key, value in metadata or ():
            trailers.setdefault(key, value.decode() if isinstance(value, bytes) else value)

        def number(key: str) -> Optional[int]:
            value = trailers.get(key)
            return int(value) if value is not None and value.isdigit() else None

        return cls(
            status.name if status is not None else "UNKNOWN",
            err.details() if hasattr(err, "details") else str(err),
            code=trailers.get(ERROR_CODE_KEY),
            shard_epoch=number(SHARD_EPOCH_KEY),
            leader=trailers.get(LEADER_KEY),
            retry_after_ms=number(RETRY_AFTER_MS_KEY),
        )


class ClientError(Error):
    """A condition of the client itself, with a `CLIENT_*` code: CLIENT_STALE_VIEW,
    CLIENT_STEP_FAILED, CLIENT_DEADLINE_EXCEEDED, CLIENT_NO_MASTER, CLIENT_CLOSED,
    CLIENT_UNKNOWN_TENSOR, CLIENT_NOT_A_FILE_TASK, CLIENT_INVALID_SECURITY (tls/token options that
    cannot work), CLIENT_MESSAGE_TOO_LARGE (a message over gRPC's size limit that the client cannot
    split), CLIENT_SHAPE_MISMATCH (a gradient whose shape, element count or element type is not
    its tensor's; `tensor`, `expected` and `actual` say which and how) and CLIENT_INVALID_OPTIONS
    (an option or argument that cannot work, or pservers that disagree on the consistency
    mode)."""

    code: str

    def __init__(
        self,
        code: str,
        message: str,
        *,
        tensor: Optional[str] = None,
        expected: Optional[Sequence[int]] = None,
        actual: Optional[Sequence[int]] = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        #: CLIENT_SHAPE_MISMATCH: the tensor, its shape and the shape given.
        self.tensor = tensor
        self.expected = tuple(expected) if expected is not None else None
        self.actual = tuple(actual) if actual is not None else None


def whole_number(option: str, value: Any, minimum: int, hint: str = "") -> int:
    """`value` as an int if it is a whole number >= `minimum` (numpy integers too; not a bool),
    else CLIENT_INVALID_OPTIONS naming the option and the value."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= minimum:
        return int(value)
    raise ClientError(
        codes.CLIENT_INVALID_OPTIONS, f"{option}: must be a whole number >= {minimum}{hint}, got {value!r}"
    )


def error_of(err: grpc.RpcError) -> Error:
    """The typed error of a failed gRPC call. gRPC's own RESOURCE_EXHAUSTED, without a domain
    code, is a message over a size limit (the client's or the server's): waiting cannot change
    it, so it is CLIENT_MESSAGE_TOO_LARGE, not a busy server to retry."""
    typed = PserverError.from_rpc_error(err)
    if typed.status == grpc.StatusCode.RESOURCE_EXHAUSTED.name and typed.code is None:
        too_large = ClientError(
            codes.CLIENT_MESSAGE_TOO_LARGE,
            f"a message over gRPC's size limit ({typed.details}): the client's is connect(max_message_bytes=), "
            "the pserver's --max-message-mb; raise them, or lower the job's block size so that one block fits",
        )
        too_large.__cause__ = typed
        return too_large
    return typed


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Runs one stub call, turning a grpc.RpcError into the client's typed error."""
    try:
        return fn(*args, **kwargs)
    except grpc.RpcError as err:
        raise error_of(err) from None


# The generated rules, with their types (to mypy the generated modules are Any).
_CODE_ACTIONS: Mapping[str, str] = error_rules.CODE_ACTIONS
_STATUS_ACTIONS: Mapping[str, Tuple[str, str]] = error_rules.STATUS_ACTIONS


def client_action_of(err: BaseException) -> Optional[str]:
    """The contract's action on `err` (proto/testdata/error_codes.json says what each means): by
    its code when this client knows it, else by its gRPC status, without a code or with one newer
    than this client. None for an error that is neither a server's nor the client's."""
    if isinstance(err, ClientError):
        return _CODE_ACTIONS.get(err.code, "FAIL")
    if not isinstance(err, PserverError):
        return None
    without_code, unknown_code = _STATUS_ACTIONS.get(err.status, ("FAIL", "FAIL"))
    if err.code is None:
        return without_code
    return _CODE_ACTIONS.get(err.code, unknown_code)


def is_stale(err: BaseException) -> bool:
    """Whether the contract's action on `err` is RERUN_STEP: the step's view is stale."""
    return client_action_of(err) == "RERUN_STEP"


def is_resend_step(err: BaseException) -> bool:
    """Whether the contract's action on `err` is RESEND_PREVIOUS_STEP (PSERVER_RESEND_STEP)."""
    return client_action_of(err) == "RESEND_PREVIOUS_STEP"


def is_shard_unavailable(err: BaseException) -> bool:
    """Whether the contract's action on `err` is WAIT_FOR_SHARD: nothing was applied."""
    return client_action_of(err) == "WAIT_FOR_SHARD"


def is_refused(err: BaseException) -> bool:
    """Whether the contract's action on `err` is REFUSED: raised at once, never waited out."""
    return client_action_of(err) == "REFUSED"


def is_retryable(err: BaseException) -> bool:
    """Whether the contract's action on `err` is RETRY or BACK_OFF: the same call is sent again
    (with the same step and epoch; after `retry_after_ms` when the server gave it)."""
    return client_action_of(err) in ("RETRY", "BACK_OFF")
