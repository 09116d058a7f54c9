"""The placement rule of proto/README.md ("Placement"), identical in every language.

A tensor larger than the job's block size is split into blocks `<name>@<k>`; each block (or a
small tensor, under its own name) goes to shard jump(fnv1a64(utf8(name)), shards). Jump
consistent hashing moves only about 1/(N+1) of the blocks when the shard count grows to N+1.

A sparse table of B buckets (a power of two, at most 2^24) puts the row of a signed 64-bit id in
bucket fmix32(lo ^ fmix32(hi)) & (B - 1), lo and hi being the low and high 32 bits of the id's
two's complement; bucket b goes where the block `<table>@<b>` would ("Tables").
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    UInt32Array = np.ndarray[Any, np.dtype[np.uint32]]

DEFAULT_BLOCK_SIZE = 1_048_576
BLOCK_SEPARATOR = "@"

_MASK64 = (1 << 64) - 1
_FNV_OFFSET_BASIS = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3


@dataclass(frozen=True)
class BlockPlacement:
    """A block's name, the elements [start, end) of the flattened tensor it holds, its shard."""

    name: str
    start: int
    end: int
    shard: int


def fnv1a64(data: bytes, start: int = _FNV_OFFSET_BASIS) -> int:
    """FNV-1a, 64-bit, of bytes. `start` continues the hash of a prefix (the value returned for
    it), so names that share a prefix hash it once."""
    h = start
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK64
    return h


def jump_hash(key: int, buckets: int) -> int:
    """Lamping and Veach's jump consistent hash. Its division is an IEEE double (a Python float),
    as in the paper's C++, so every language gets the same bucket."""
    if not isinstance(buckets, int) or buckets < 1 or buckets > 2**31 - 1:
        raise ValueError(f"jump_hash: buckets must be an integer in [1, 2^31), got {buckets}")
    b, j, k = -1, 0, key & _MASK64
    while j < buckets:
        b = j
        k = (k * 2862933555777941757 + 1) & _MASK64
        j = int((b + 1) * (2147483648.0 / float((k >> 33) + 1)))
    return b


def shard_of(block_name: str, shards: int) -> int:
    """The shard of a block (or of a tensor stored whole) among `shards`."""
    return jump_hash(fnv1a64(block_name.encode("utf-8")), shards)


def place_tensor(name: str, elements: int, block_size: int, shards: int) -> list[BlockPlacement]:
    """The blocks of a tensor of `elements` elements and where they go."""
    if elements < 0:
        raise ValueError(f"place_tensor: elements must be non-negative, got {elements}")
    if block_size < 1:
        raise ValueError(f"place_tensor: block_size must be positive, got {block_size}")
    if elements <= block_size:
        return [BlockPlacement(name, 0, elements, shard_of(name, shards))]
    blocks: list[BlockPlacement] = []
    for k, start in enumerate(range(0, elements, block_size)):
        block = f"{name}{BLOCK_SEPARATOR}{k}"
        blocks.append(BlockPlacement(block, start, min(start + block_size, elements), shard_of(block, shards)))
    return blocks


# --- sparse tables ------------------------------------------------------------------------------

#: The most buckets a table may have: a client holds one bucket → shard entry per bucket.
MAX_TABLE_BUCKETS = 1 << 24

_MASK32 = (1 << 32) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def fmix32(h: int) -> int:
    """MurmurHash3's 32-bit finalizer, on and to an unsigned 32-bit integer."""
    h &= _MASK32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    return h


def check_table_buckets(buckets: int, caller: str = "table") -> None:
    """Raises ValueError unless `buckets` is a table's bucket count: a power of two in [1, 2^24]."""
    if (
        not isinstance(buckets, int)
        or isinstance(buckets, bool)
        or buckets < 1
        or buckets > MAX_TABLE_BUCKETS
        or buckets & (buckets - 1)
    ):
        raise ValueError(f"{caller}: buckets must be a power of two in [1, 2^24], got {buckets!r}")


def bucket_of_id(id: int, buckets: int) -> int:
    """The bucket of a signed 64-bit id (an int or a numpy integer) among `buckets`."""
    check_table_buckets(buckets, "bucket_of_id")
    value = operator.index(id)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"bucket_of_id: id must be a signed 64-bit integer, got {value}")
    lo, hi = value & _MASK32, (value >> 32) & _MASK32  # two's complement halves
    return fmix32(lo ^ fmix32(hi)) & (buckets - 1)


def _fmix32_array(h: UInt32Array) -> UInt32Array:
    # In place on a uint32 array: numpy's uint32 products wrap modulo 2^32, as the rule wants.
    import numpy as np

    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def buckets_of_ids(ids: Any, buckets: int) -> UInt32Array:
    """The buckets of an array of int64 ids (any shape; other integer types are converted, a uint64
    by its bits) as a uint32 array of the same shape, in uint32 arithmetic. Needs numpy."""
    import numpy as np

    check_table_buckets(buckets, "buckets_of_ids")
    array = np.asarray(ids)
    if array.dtype.kind not in "iu":
        raise TypeError(f"buckets_of_ids: ids must be integers, got an array of {array.dtype}")
    words = np.ascontiguousarray(array.astype("<i8", copy=False)).view("<u4").reshape(array.shape + (2,))
    lo, hi = words[..., 0].astype(np.uint32), words[..., 1].astype(np.uint32)
    out = _fmix32_array(lo ^ _fmix32_array(hi))
    out &= np.uint32(buckets - 1)
    return out


def table_shard_of(table: str, bucket: int, shard_count: int) -> int:
    """The shard of bucket `bucket` of table `table` among `shard_count`: the block `table@bucket`'s."""
    return shard_of(f"{table}{BLOCK_SEPARATOR}{bucket}", shard_count)


def table_shards(table: str, buckets: int, shard_count: int) -> list[int]:
    """The shard of every bucket of table `table` among `shard_count`, indexed by bucket: what a
    client computes once per cluster view. With numpy, route ids with
    `numpy.asarray(shards, numpy.uint32)[buckets_of_ids(ids, buckets)]`."""
    check_table_buckets(buckets, "table_shards")
    # FNV-1a runs byte by byte: the bytes of `table@` are hashed once, then each bucket's digits.
    prefix = fnv1a64(f"{table}{BLOCK_SEPARATOR}".encode("utf-8"))
    return [jump_hash(fnv1a64(str(b).encode("ascii"), prefix), shard_count) for b in range(buckets)]
