"""A step's row traffic: ids deduplicated and grouped by shard for lookups and pushes, rows
scattered back in request order, and the rows a step stages merged into one SparseGrad per table
and shard. Needs numpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Sequence

from . import codes
from ._proto.pserver.v1 import table_pb2
from .errors import ClientError
from .placement import buckets_of_ids

if TYPE_CHECKING:
    import numpy as np

    from .tables import TableDirectory, TableLayout

    Int64Array = np.ndarray[Any, np.dtype[np.int64]]
    IndexArray = np.ndarray[Any, np.dtype[np.intp]]
    Float32Array = np.ndarray[Any, np.dtype[np.float32]]
    UInt32Array = np.ndarray[Any, np.dtype[np.uint32]]

_UINT32_MAX = 0xFFFFFFFF


def _numpy() -> Any:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - tables need numpy
        raise ClientError(codes.CLIENT_SHAPE_MISMATCH, "sparse tables need numpy") from None
    return np


def as_ids(ids: Any, what: str) -> Int64Array:
    """The ids as a 1-D int64 array (a copy): a numpy integer array or a sequence of ints, each a
    signed 64-bit value; else CLIENT_SHAPE_MISMATCH naming `what`."""
    np = _numpy()
    if isinstance(ids, np.ndarray):
        array = ids
    else:
        try:
            array = np.asarray(list(ids)) if len(ids) else np.zeros(0, np.int64)
            if array.dtype == object:  # ints beyond 64 bits
                array = np.array(array, dtype=np.int64)
        except (OverflowError, TypeError, ValueError) as err:
            raise ClientError(codes.CLIENT_SHAPE_MISMATCH, f"{what}: ids must be signed 64-bit integers ({err})") from None
    if array.ndim != 1:
        raise ClientError(codes.CLIENT_SHAPE_MISMATCH, f"{what}: ids must be 1-D, got shape {list(array.shape)}")
    if array.dtype.kind not in "iu" and not (array.size == 0 and array.dtype.kind == "f"):
        raise ClientError(codes.CLIENT_SHAPE_MISMATCH, f"{what}: ids must be integers, got an array of {array.dtype}")
    if array.dtype == np.uint64 and array.size and int(array.max()) > (1 << 63) - 1:
        raise ClientError(codes.CLIENT_SHAPE_MISMATCH, f"{what}: ids must be signed 64-bit integers, got {int(array.max())}")
    out: Int64Array = np.array(array, dtype="<i8")
    return out


@dataclass(frozen=True)
class DistinctIds:
    """A batch of ids with duplicates removed: `ids` the distinct ids in order of first
    appearance, `first[k]` the batch index where distinct id k first appears, `inverse[i]` the
    distinct index of the batch's id i."""

    ids: Int64Array
    first: IndexArray
    inverse: IndexArray

    @property
    def count(self) -> int:
        return len(self.ids)


def distinct_ids(ids: Int64Array) -> DistinctIds:
    """Removes duplicate ids, keeping the order of first appearance."""
    np = _numpy()
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return DistinctIds(unique[order], first[order], rank[inverse.reshape(-1)])


def group_by_shard(ids: Int64Array, layout: TableLayout, bucket_shards: UInt32Array) -> dict[int, IndexArray]:
    """The indices of `ids` on each shard (ascending, so first-appearance order), by shard."""
    np = _numpy()
    if len(ids) == 0:
        return {}
    shards = bucket_shards[buckets_of_ids(ids, layout.buckets)]
    order = np.argsort(shards, kind="stable")
    sorted_shards = shards[order]
    starts = np.flatnonzero(np.r_[True, sorted_shards[1:] != sorted_shards[:-1]])
    ends = np.r_[starts[1:], len(order)]
    return {int(sorted_shards[s]): order[s:e] for s, e in zip(starts, ends)}


def scatter_rows(distinct: DistinctIds, rows: Float32Array) -> Float32Array:
    """The rows of a lookup in request order (duplicates included): `rows` holds one row per
    distinct id."""
    if distinct.count == len(distinct.inverse):
        return rows  # distinct ids keep their first-appearance order
    return rows[distinct.inverse]


@dataclass(frozen=True)
class StagedRows:
    """Row gradients as push_rows was given them, checked and copied."""

    ids: Int64Array
    grads: Float32Array  # (len(ids), dim)
    counts: Optional[UInt32Array]


def check_rows(layout: TableLayout, ids: Any, grads: Any, counts: Any = None) -> StagedRows:
    """Checks a push_rows call against the table and copies it: `grads` holds ids × dim float32
    values ((len(ids), dim) or flat), `counts` (if given) one non-negative count per id.
    CLIENT_SHAPE_MISMATCH names the table, the expected and the actual."""
    np = _numpy()
    what = f"rows of table {layout.name}"

    def mismatch(detail: str) -> ClientError:
        return ClientError(codes.CLIENT_SHAPE_MISMATCH, f"{what}: {detail}")

    id_array = as_ids(ids, what)
    n, dim = len(id_array), layout.dim
    if isinstance(grads, np.ndarray) and grads.dtype != np.float32:
        raise mismatch(f"grads must be float32, got {grads.dtype}")
    try:
        values = np.array(grads, dtype="<f4")
    except (TypeError, ValueError) as err:
        raise mismatch(f"grads must be float32 values ({err})") from None
    if values.size != n * dim or values.ndim not in (1, 2) or (values.ndim == 2 and values.shape != (n, dim)):
        raise mismatch(f"expected {n} ids × dim {dim} = {n * dim} values, got shape {list(values.shape)}")
    count_array = None
    if counts is not None:
        raw = np.asarray(counts)
        if raw.ndim != 1 or len(raw) != n:
            raise mismatch(f"expected {n} counts (one per id), got shape {list(raw.shape)}")
        if n and (raw.dtype.kind not in "iu" or int(raw.min()) < 0 or int(raw.max()) > _UINT32_MAX):
            raise mismatch("counts must be integers in [0, 2^32)")
        count_array = np.array(raw, dtype="<u4")
    return StagedRows(id_array, values.reshape(n, dim), count_array)


@dataclass(frozen=True)
class MergedRows:
    """A table's row gradients with one row per distinct id."""

    ids: DistinctIds
    #: (count, dim): the sum of each id's rows.
    grads: Float32Array
    #: Occurrences per distinct id, when any call gave counts (1 for calls that did not).
    counts: Optional[UInt32Array]


def merge_rows(dim: int, staged: Sequence[StagedRows]) -> MergedRows:
    """Merges the step's row gradients of one table: duplicate ids (within a call and across
    calls) summed in order of first appearance, in float32 arithmetic (each addition rounded to
    float32, as the pserver would), and their counts summed."""
    np = _numpy()
    ids = np.concatenate([s.ids for s in staged])
    rows = np.concatenate([s.grads for s in staged]).reshape(len(ids), dim)
    distinct = distinct_ids(ids)
    grads = rows[distinct.first].copy()
    later = np.ones(len(ids), dtype=bool)
    later[distinct.first] = False
    # add.at is unbuffered: each repeated id's rows are added one at a time, in batch order, in
    # the array's float32.
    np.add.at(grads, distinct.inverse[later], rows[later])
    counts = None
    if any(s.counts is not None for s in staged):
        given = np.concatenate([s.counts if s.counts is not None else np.ones(len(s.ids), np.uint32) for s in staged])
        sums = np.zeros(distinct.count, dtype=np.uint64)
        np.add.at(sums, distinct.inverse, given.astype(np.uint64))
        counts = np.minimum(sums, _UINT32_MAX).astype("<u4")
    return MergedRows(distinct, grads, counts)


def sparse_grads_by_shard(table: str, merged: MergedRows, groups: dict[int, IndexArray]) -> dict[int, Any]:
    """Each shard's part of merged rows, as the SparseGrad of its push."""
    out: dict[int, Any] = {}
    for shard, indices in groups.items():
        grad = table_pb2.SparseGrad(
            table=table,
            ids=merged.ids.ids[indices].tobytes(),
            grads=merged.grads[indices].tobytes(),
        )
        if merged.counts is not None:
            grad.counts = merged.counts[indices].tobytes()
        out[shard] = grad
    return out


class RowStage:
    """A step's row gradients by table, until its push takes them."""

    def __init__(self) -> None:
        self._by_table: dict[str, list[StagedRows]] = {}

    @property
    def empty(self) -> bool:
        return not self._by_table

    def add(self, table: str, rows: StagedRows) -> None:
        self._by_table.setdefault(table, []).append(rows)

    def take(self, tables: TableDirectory, shard_count: int) -> dict[int, list[Any]]:
        """The staged rows merged per table and split by shard (each shard's SparseGrads); clears."""
        by_shard: dict[int, list[Any]] = {}
        for table, staged in self._by_table.items():
            layout = tables.get(table)
            assert layout is not None  # push_rows checked it
            merged = merge_rows(layout.dim, staged)
            groups = group_by_shard(merged.ids.ids, layout, tables.shards_of(layout, shard_count))
            for shard, grad in sparse_grads_by_shard(table, merged, groups).items():
                by_shard.setdefault(shard, []).append(grad)
        self._by_table.clear()
        return by_shard
