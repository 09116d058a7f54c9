"""The model as the shards list it (ListParams), for a process that never initialized it.

Each shard lists the tensors and blocks it holds. A tensor stored whole is one entry under its
own name; a split one is blocks `<name>@0` … `<name>@<k-1>` spread over the shards, every block but
the last holding exactly the job's block size. The tensor's length is the sum of its entries'
elements; its element type, shape and optimizer are the same on every entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from google.protobuf import json_format

from . import codes
from .errors import ClientError
from .placement import BLOCK_SEPARATOR
from .tensors import Shape, TensorSpec, element_type, element_type_name, elements_of


@dataclass(frozen=True)
class ParamInfo:
    """One tensor of the model, as `Client.list_params()` returns it."""

    #: The element type's name, e.g. "ELEMENT_TYPE_FLOAT32".
    element_type: str
    #: The whole tensor's shape as initialized; () for a flat vector.
    shape: Shape
    #: Its number of elements.
    length: int
    #: How gradients update it, every default filled in (the learning rate included), as a
    #: snake_case dict ({"adam": {...}, "learning_rate": {"base": 0.001}}); None when the tensor
    #: is stored, not optimized.
    optimizer: Optional[dict[str, Any]]

    def spec(self) -> TensorSpec:
        return TensorSpec(element_type(self.element_type), self.length, self.shape)


def assemble(entries: Iterable[Any], block_size: int) -> dict[str, ParamInfo]:
    """The tensors of the model from every shard's ParamSpec entries (all shards' together)."""
    by_tensor: dict[str, dict[Optional[int], Any]] = {}
    for entry in entries:
        tensor, separator, index = entry.name.rpartition(BLOCK_SEPARATOR)
        if not separator:
            tensor, block = entry.name, None
        elif index.isdigit():
            block = int(index)
        else:
            raise _inconsistent(entry.name, f"block name {entry.name!r} does not end in a block number")
        by_tensor.setdefault(tensor, {})[block] = entry
    return {name: _tensor(name, blocks, block_size) for name, blocks in sorted(by_tensor.items())}


def _tensor(name: str, blocks: Mapping[Optional[int], Any], block_size: int) -> ParamInfo:
    if None in blocks:
        if len(blocks) > 1:
            raise _inconsistent(name, "listed both whole and in blocks")
        length = int(blocks[None].elements)
        first = blocks[None]
    else:
        count = len(blocks)
        missing = [k for k in range(count) if k not in blocks]
        if missing:
            raise _inconsistent(name, f"blocks {sorted(k for k in blocks if k is not None)} listed, {missing} missing")
        for k in range(count - 1):
            if int(blocks[k].elements) != block_size:
                raise _inconsistent(name, f"block {k} holds {blocks[k].elements} elements, the block size is {block_size}")
        last = int(blocks[count - 1].elements)
        if not 0 < last <= block_size:
            raise _inconsistent(name, f"its last block holds {last} elements, the block size is {block_size}")
        length = block_size * (count - 1) + last
        first = blocks[0]
    shape = tuple(int(d) for d in first.shape)
    if shape and elements_of(shape) != length:
        raise _inconsistent(name, f"shape {shape} holds {elements_of(shape)} elements, its entries {length}")
    optimizer = (
        json_format.MessageToDict(first.optimizer, preserving_proto_field_name=True)
        if first.HasField("optimizer")
        else None
    )
    return ParamInfo(element_type_name(first.element_type), shape, length, optimizer)


def _inconsistent(name: str, why: str) -> ClientError:
    return ClientError(codes.CLIENT_UNKNOWN_TENSOR, f"tensor {name}: the shards list it inconsistently: {why}")
