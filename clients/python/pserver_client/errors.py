"""Typed errors: a failed RPC never escapes as a raw grpc.RpcError.

Server errors become `PserverError` (gRPC status name, the domain code from the
`pserver-error-code` trailer, facts from the other trailers); the client's own conditions become
`ClientError` with a `CLIENT_*` code. Callers branch on codes, never on message text.
"""

import grpc

ERROR_CODE_KEY = "pserver-error-code"
SHARD_EPOCH_KEY = "pserver-shard-epoch"
LEADER_KEY = "pserver-leader"
RETRY_AFTER_MS_KEY = "pserver-retry-after-ms"


class Error(Exception):
    """Base of every error the client raises."""


class PserverError(Error):
    """A call that a master or pserver answered with an error (or that never got an answer)."""

    def __init__(self, status, message, code=None, shard_epoch=None, leader=None, retry_after_ms=None):
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
    def from_rpc_error(cls, err):
        """Converts a grpc.RpcError (from a stub call or a future) into a PserverError."""
        status = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
        trailers = {}
        metadata = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
        for key, value in metadata or ():
            trailers.setdefault(key, value.decode() if isinstance(value, bytes) else value)

        def number(key):
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
    """A condition of the client itself: CLIENT_STALE_VIEW, CLIENT_STEP_FAILED,
    CLIENT_DEADLINE_EXCEEDED, CLIENT_NO_MASTER, CLIENT_CLOSED, CLIENT_UNKNOWN_TENSOR,
    CLIENT_NOT_A_FILE_TASK, CLIENT_INVALID_SECURITY (tls/token options that cannot work: a token
    without TLS, a certificate without its key, a file that cannot be read)."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


def call(fn, *args, **kwargs):
    """Runs one stub call, turning a grpc.RpcError into a PserverError."""
    try:
        return fn(*args, **kwargs)
    except grpc.RpcError as err:
        raise PserverError.from_rpc_error(err) from None


def is_stale_view(err):
    """Whether the view a step was computed under is stale: the shard's epoch moved (ABORTED),
    the pserver at that address serves another index, or the client aborted the step on a new
    view. The step is then run again with a fresh context and the same identity."""
    if isinstance(err, ClientError):
        return err.code == "CLIENT_STALE_VIEW"
    if not isinstance(err, PserverError):
        return False
    return err.status == "ABORTED" or err.code == "PSERVER_WRONG_SHARD"


_UNAVAILABLE_SHARD_CODES = {"PSERVER_NOT_SERVING", "PSERVER_FENCED", "PSERVER_SHUTTING_DOWN"}


def is_shard_unavailable(err):
    """Whether the shard is not served at that address right now: its pserver is recovering it,
    was fenced or is shutting down, and nothing was applied. The call is retried after a backoff:
    either the pserver starts serving (same epoch) or the master publishes a new assignment, which
    aborts the step's context. Not a new view in itself."""
    return isinstance(err, PserverError) and err.code in _UNAVAILABLE_SHARD_CODES


def is_refused(err):
    """Whether the server refused the caller (UNAUTHENTICATED: no verified certificate or valid
    token; PERMISSION_DENIED: the caller's role may not call the method). Waiting does not
    change that answer, so the client raises it instead of waiting for a shard to come up."""
    return isinstance(err, PserverError) and err.status in ("UNAUTHENTICATED", "PERMISSION_DENIED")


def is_retryable(err):
    """Whether a call's outcome is unknown (it may have been applied), or the server is busy:
    retry it as is, with the same step and epoch (the pserver deduplicates pushes)."""
    if not isinstance(err, PserverError):
        return False
    if err.status == "RESOURCE_EXHAUSTED":
        return True
    # A domain code is the server's considered answer, not an unknown outcome.
    if err.code is not None and err.code not in ("DEADLINE_EXCEEDED", "CANCELLED"):
        return False
    return err.status in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED", "INTERNAL")
