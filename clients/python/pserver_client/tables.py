"""Sparse tables as the client knows them: specs completed for InitTable, and the bucket → shard
array that routes each table's ids (proto/README.md, "Tables")."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Union

from google.protobuf import json_format

from . import codes
from ._proto.pserver.v1 import table_pb2
from .errors import ClientError
from .placement import BLOCK_SEPARATOR, check_table_buckets, table_shards

if TYPE_CHECKING:
    import numpy as np

#: A table's spec: a TableSpec proto, or a dict of its fields, snake_case as in table.proto
#: ({"name": "emb", "dim": 16, "optimizer": {"adagrad": {}}}) or proto JSON's camelCase.
TableLike = Union[Mapping[str, Any], Any]

#: Buckets of a table whose spec leaves them unset (table.proto's advice).
DEFAULT_TABLE_BUCKETS = 4096
#: The widest row the contract allows.
MAX_TABLE_DIM = 4096


@dataclass(frozen=True)
class TableLayout:
    """What routing a table's ids needs: its name, row width and bucket count."""

    name: str
    dim: int
    buckets: int


def table_spec(spec: TableLike) -> Any:
    """The TableSpec sent on InitTable, from a proto or a dict: buckets filled in (every trainer
    routes with the same count) and checked where the client routes by them, so a bad spec is
    refused before anything is sent ('@' in the name: CLIENT_UNKNOWN_TENSOR; a dim outside
    [1, 4096] or buckets that are not a power of two in [1, 2^24]: CLIENT_SHAPE_MISMATCH)."""
    if isinstance(spec, table_pb2.TableSpec):
        out = table_pb2.TableSpec()
        out.CopyFrom(spec)
    else:
        out = json_format.ParseDict(spec, table_pb2.TableSpec())
    if out.buckets == 0:
        out.buckets = DEFAULT_TABLE_BUCKETS
    check_layout(out.name, out.dim, out.buckets)
    return out


def check_layout(name: str, dim: int, buckets: int) -> None:
    if not name or BLOCK_SEPARATOR in name:
        raise ClientError(codes.CLIENT_UNKNOWN_TENSOR, f"table {name!r}: a name is needed, and '@' is not allowed in it")
    if not isinstance(dim, int) or not 1 <= dim <= MAX_TABLE_DIM:
        raise ClientError(codes.CLIENT_SHAPE_MISMATCH, f"table {name}: dim must be an integer in [1, {MAX_TABLE_DIM}], got {dim}")
    try:
        check_table_buckets(buckets, f"table {name}")
    except ValueError as err:
        raise ClientError(codes.CLIENT_SHAPE_MISMATCH, str(err)) from None


class TableDirectory:
    """The tables a client knows (declared at init_params or listed from the shards) and, per
    table and shard count, the bucket → shard array: computed once per view shape, then every id is
    routed with one mix and one lookup. The array depends only on the table, its buckets and the
    shard count, so a new view with the same shard count (a pserver replaced) reuses it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._layouts: dict[str, TableLayout] = {}
        self._routes: dict[tuple[str, int, int], np.ndarray[Any, np.dtype[np.uint32]]] = {}

    def declare(self, layout: TableLayout) -> None:
        """Records a table; a different layout under a known name replaces it (and its routes)."""
        check_layout(layout.name, layout.dim, layout.buckets)
        with self._lock:
            if self._layouts.get(layout.name) == layout:
                return
            self._layouts[layout.name] = layout
            for key in [k for k in self._routes if k[0] == layout.name]:
                del self._routes[key]

    def learn(self, specs: Iterable[Any]) -> None:
        """Records the tables the shards listed (ListParamsResponse.tables)."""
        for spec in specs:
            self.declare(TableLayout(spec.name, spec.dim, spec.buckets))

    def get(self, name: str) -> Optional[TableLayout]:
        with self._lock:
            return self._layouts.get(name)

    def all(self) -> dict[str, TableLayout]:
        """Every known table by name."""
        with self._lock:
            return dict(self._layouts)

    def shards_of(self, layout: TableLayout, shard_count: int) -> np.ndarray[Any, np.dtype[np.uint32]]:
        """The shard of each of the table's buckets among `shard_count` shards (a uint32 array)."""
        import numpy as np

        key = (layout.name, layout.buckets, shard_count)
        with self._lock:
            shards = self._routes.get(key)
        if shards is None:
            shards = np.asarray(table_shards(layout.name, layout.buckets, shard_count), dtype=np.uint32)
            with self._lock:
                self._routes[key] = shards
        return shards
