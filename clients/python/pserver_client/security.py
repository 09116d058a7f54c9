"""TLS and bearer tokens for every channel the client opens (SECURITY.md).

Without `tls` the client dials plaintext. With it, the client checks the servers' certificates
against `ca` (the system's roots when absent) and, given `cert` and `key`, presents a client
certificate (mutual TLS). A `token` travels as `authorization: Bearer <token>` on every call, and
only over TLS: a token sent in plaintext can be read off the network and replayed, so the client
refuses one without `tls` before it dials anything.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Sequence, Tuple, Union

import grpc

from . import codes
from .errors import ClientError

Pem = Union[bytes, str]

TARGET_NAME_OVERRIDE = "grpc.ssl_target_name_override"


@dataclasses.dataclass(frozen=True)
class TlsOptions:
    """How the client checks the servers and, with `cert` and `key`, proves itself to them.

    `ca`, `cert` and `key` are PEM (bytes or str); `load_security` reads them from files.
    `server_name` is the name the servers' certificates carry when it is not the host dialled
    (a pserver reached by IP whose certificate names `pserver-0.ml.svc`); it is also sent as the
    calls' authority.
    """

    #: The CA that signed the servers' certificates; the system's roots when None.
    ca: Optional[Pem] = None
    #: A client certificate chain, for servers that verify clients (mutual TLS).
    cert: Optional[Pem] = None
    #: The private key of `cert` (kept out of repr).
    key: Optional[Pem] = dataclasses.field(default=None, repr=False)
    server_name: Optional[str] = None


def load_security(
    ca_file: Optional[str] = None,
    cert_file: Optional[str] = None,
    key_file: Optional[str] = None,
    token_file: Optional[str] = None,
    server_name: Optional[str] = None,
) -> dict[str, Any]:
    """Reads the files into `connect`'s `tls` and `token` keywords:

        connect(master=[...], **load_security(ca_file="ca.pem", token_file="trainer.token"))

    `tls` is there when any of ca_file, cert_file, key_file, server_name is given, and `token`
    (the file's content, surrounding whitespace stripped) when token_file is. A file that cannot
    be read is a ClientError (CLIENT_INVALID_SECURITY) naming it."""
    security: dict[str, Any] = {}
    if any(v is not None for v in (ca_file, cert_file, key_file, server_name)):
        security["tls"] = TlsOptions(
            ca=_read("CA", ca_file),
            cert=_read("certificate", cert_file),
            key=_read("key", key_file),
            server_name=server_name,
        )
    if token_file is not None:
        token = _read("token", token_file)
        assert token is not None
        security["token"] = token.decode("utf-8").strip()
    return security


#: How soon a channel dials again after its server went away. gRPC's default waits 1 s, then 1.6x
#: more each time up to 120 s: with it, calls kept failing 6-10 s after a restarted server listened
#: again. From 200 ms up to 1 s, a trainer notices a server that is back within about a second.
RECONNECT_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 1000),
)

#: Keepalive pings while calls are open: a connection whose peer went silent (a black-holed
#: route, a host gone without a reset) fails within 5 s and its calls are retried on a new one,
#: instead of each waiting out its deadline on a connection the channel still calls ready.
KEEPALIVE_OPTIONS = (
    ("grpc.keepalive_time_ms", 2000),
    ("grpc.keepalive_timeout_ms", 3000),
)


#: gRPC channel options: (name, value) pairs.
ChannelOptions = Sequence[Tuple[str, Any]]


def open_channel(
    address: str, tls: Optional[TlsOptions] = None, token: Optional[str] = None, options: ChannelOptions = ()
) -> grpc.Channel:
    """A channel to one master or pserver with these security settings, for raw stubs (the
    client's own channels are made the same way)."""
    return ChannelFactory(tls, token).open(address, options)


class ChannelFactory:
    """Opens every channel of one client with the same credentials, checked once."""

    def __init__(self, tls: Optional[TlsOptions] = None, token: Optional[str] = None) -> None:
        if token is not None:
            if tls is None:
                raise ClientError(
                    codes.CLIENT_INVALID_SECURITY,
                    "a bearer token needs TLS: give tls=TlsOptions(...) too "
                    "(a token sent in plaintext can be read and replayed)",
                )
            token = token.strip()
            if not token or any(c.isspace() for c in token):
                raise ClientError(codes.CLIENT_INVALID_SECURITY, "the bearer token is empty or contains whitespace")
        self._credentials: Optional[grpc.ChannelCredentials] = None
        self._options: ChannelOptions = ()
        if tls is None:
            return
        if not isinstance(tls, TlsOptions):
            raise ClientError(codes.CLIENT_INVALID_SECURITY, f"tls: expected TlsOptions, got {type(tls).__name__}")
        if (tls.cert is None) != (tls.key is None):
            raise ClientError(codes.CLIENT_INVALID_SECURITY, "tls: cert and key go together (mutual TLS needs both)")
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_bytes(tls.ca), private_key=_bytes(tls.key), certificate_chain=_bytes(tls.cert)
        )
        if token is not None:
            credentials = grpc.composite_channel_credentials(
                credentials, grpc.access_token_call_credentials(token)
            )
        self._credentials = credentials
        if tls.server_name is not None:
            # C-core checks the certificate against this name and sends it as the authority.
            self._options = ((TARGET_NAME_OVERRIDE, tls.server_name),)

    @property
    def secure(self) -> bool:
        return self._credentials is not None

    def open(self, address: str, options: ChannelOptions = ()) -> grpc.Channel:
        """A channel to `address`: every channel of the client is opened here, with the reconnect
        backoff below and the TLS settings."""
        every = list(RECONNECT_OPTIONS) + list(KEEPALIVE_OPTIONS) + list(options)
        if self._credentials is None:
            return grpc.insecure_channel(address, options=every)
        return grpc.secure_channel(address, self._credentials, options=every + list(self._options))


def _bytes(pem: Optional[Pem]) -> Optional[bytes]:
    return pem.encode("ascii") if isinstance(pem, str) else pem


def _read(what: str, path: Optional[str]) -> Optional[bytes]:
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise ClientError(codes.CLIENT_INVALID_SECURITY, f"{what} {path}: {err.strerror or err}") from None
