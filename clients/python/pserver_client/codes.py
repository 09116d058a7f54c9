"""The error codes of the contract, by name: `codes.PSERVER_STALE_EPOCH == "PSERVER_STALE_EPOCH"`.

Every value of proto/pserver/v1/errors.proto's `ErrorCode` (the one list of codes, shared with the
TypeScript and Go clients) is a constant here, made from the generated enum when the module is
imported, so a code added to the proto is here after `npx nx run client-python:generate`. Compare
`PserverError.code` and `ClientError.code` with them:

    from pserver_client import codes
    if err.code == codes.PSERVER_OVERLOADED: ...
"""

from __future__ import annotations

from typing import FrozenSet

from ._proto.pserver.v1.errors_pb2 import ErrorCode

#: Every code's name (value 0, "no code", left out).
ALL: FrozenSet[str] = frozenset(str(ErrorCode.Name(value)) for value in ErrorCode.values() if value != 0)

globals().update({name: name for name in ALL})


def __getattr__(name: str) -> str:
    # Reached only for names that are not codes (the codes are module globals): a typo fails
    # loudly. To type checkers it also says that every other attribute is a code's name.
    raise AttributeError(f"pserver_client.codes has no error code {name!r} (see proto/pserver/v1/errors.proto)")


def name_of(value: int) -> str:
    """The name of an `ErrorCode` value (`name_of(ErrorCode.PSERVER_STALE_EPOCH)`)."""
    return str(ErrorCode.Name(value))
