"""The placement rule of proto/README.md ("Placement"), identical in every language.

A tensor larger than the job's block size is split into blocks `<name>@<k>`; each block (or a
small tensor, under its own name) goes to shard jump(fnv1a64(utf8(name)), shards). Jump
consistent hashing moves only about 1/(N+1) of the blocks when the shard count grows to N+1.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def fnv1a64(data: bytes) -> int:
    """FNV-1a, 64-bit, of bytes."""
    h = _FNV_OFFSET_BASIS
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
