"""Arrays in, arrays out: numpy arrays when numpy is importable, `array.array`/`memoryview`
otherwise, converted to and from the wire form (little-endian bytes, row-major, with an
ElementType). FLOAT16 is numpy's float16; BFLOAT16 travels as raw uint16 bits (numpy has no
bfloat16), so say `Param(bits, element_type="BFLOAT16")` for it.
"""

from __future__ import annotations

import array
import math
import sys
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple, Union

from ._proto.pserver.v1 import tensor_pb2

try:  # numpy is optional: the client works with array.array and memoryview without it.
    import numpy as np
except ImportError:  # pragma: no cover - exercised only where numpy is missing
    np = None  # type: ignore[assignment]

ElementType = tensor_pb2.ElementType

#: A tensor's shape: its dimensions, outermost first; () for a flat vector of unknown layout.
Shape = Tuple[int, ...]
#: An element type: an ElementType value, its name ("ELEMENT_TYPE_FLOAT32") or short name ("FLOAT32").
ElementTypeLike = Union[int, str]
#: Tensor values: a numpy array (or anything numpy.asarray takes), array.array, memoryview, or Param.
Values = Any

#: Bytes per element, by ElementType value.
ELEMENT_SIZE = {
    ElementType.ELEMENT_TYPE_INT32: 4,
    ElementType.ELEMENT_TYPE_UINT32: 4,
    ElementType.ELEMENT_TYPE_INT64: 8,
    ElementType.ELEMENT_TYPE_UINT64: 8,
    ElementType.ELEMENT_TYPE_FLOAT32: 4,
    ElementType.ELEMENT_TYPE_FLOAT64: 8,
    ElementType.ELEMENT_TYPE_FLOAT16: 2,
    ElementType.ELEMENT_TYPE_BFLOAT16: 2,
}

_NUMPY_DTYPE = {
    ElementType.ELEMENT_TYPE_INT32: "<i4",
    ElementType.ELEMENT_TYPE_UINT32: "<u4",
    ElementType.ELEMENT_TYPE_INT64: "<i8",
    ElementType.ELEMENT_TYPE_UINT64: "<u8",
    ElementType.ELEMENT_TYPE_FLOAT32: "<f4",
    ElementType.ELEMENT_TYPE_FLOAT64: "<f8",
    ElementType.ELEMENT_TYPE_FLOAT16: "<f2",
    ElementType.ELEMENT_TYPE_BFLOAT16: "<u2",
}

# (kind, itemsize) of numpy dtypes and array/memoryview formats → ElementType.
_BY_KIND = {
    ("i", 4): ElementType.ELEMENT_TYPE_INT32,
    ("u", 4): ElementType.ELEMENT_TYPE_UINT32,
    ("i", 8): ElementType.ELEMENT_TYPE_INT64,
    ("u", 8): ElementType.ELEMENT_TYPE_UINT64,
    ("f", 4): ElementType.ELEMENT_TYPE_FLOAT32,
    ("f", 8): ElementType.ELEMENT_TYPE_FLOAT64,
    ("f", 2): ElementType.ELEMENT_TYPE_FLOAT16,
}
_FORMAT_KIND = {"i": "i", "l": "i", "q": "i", "I": "u", "L": "u", "Q": "u", "f": "f", "d": "f", "e": "f", "H": "u"}
# array.array typecodes for results without numpy (16-bit floats come back as raw 'H' bits).
_ARRAY_TYPECODE = {
    ElementType.ELEMENT_TYPE_INT32: "i",
    ElementType.ELEMENT_TYPE_UINT32: "I",
    ElementType.ELEMENT_TYPE_INT64: "q",
    ElementType.ELEMENT_TYPE_UINT64: "Q",
    ElementType.ELEMENT_TYPE_FLOAT32: "f",
    ElementType.ELEMENT_TYPE_FLOAT64: "d",
    ElementType.ELEMENT_TYPE_FLOAT16: "H",
    ElementType.ELEMENT_TYPE_BFLOAT16: "H",
}


def element_type(value: ElementTypeLike) -> int:
    """An ElementType from its value, its full name or its short name ("FLOAT32")."""
    if isinstance(value, int):
        return value
    name = value if value.startswith("ELEMENT_TYPE_") else "ELEMENT_TYPE_" + value.upper()
    return int(ElementType.Value(name))


def element_type_name(value: int) -> str:
    """The full name of an ElementType value ("ELEMENT_TYPE_FLOAT32")."""
    return str(ElementType.Name(value))


def elements_of(shape: Sequence[int]) -> int:
    """How many elements a shape holds (1 for ())."""
    return math.prod(shape)


@dataclass
class Param:
    """Values with what the array cannot say: a shape, or an element type (BFLOAT16)."""

    values: Values
    shape: Optional[Sequence[int]] = None
    element_type: Optional[ElementTypeLike] = None


@dataclass(frozen=True)
class TensorSpec:
    """What the client knows of a tensor of the model: element type, element count, whole shape."""

    element_type: int
    length: int
    #: () when the tensor has no layout of its own (a flat vector).
    shape: Shape

    def element_size(self) -> int:
        return ELEMENT_SIZE[self.element_type]


@dataclass
class Wire:
    """A whole tensor in wire form: little-endian bytes, element type, length, shape."""

    data: memoryview
    element_type: int
    length: int
    shape: Shape
    #: Whether `shape` is the values' own (a numpy array's, or a Param's), not a flat buffer's
    #: length: a gradient's own shape must be its tensor's.
    shaped: bool = True

    def block(self, start: int, end: int) -> memoryview:
        """The bytes of elements [start, end) (a view, no copy)."""
        size = ELEMENT_SIZE[self.element_type]
        return self.data[start * size : end * size]

    def spec(self) -> TensorSpec:
        return TensorSpec(self.element_type, self.length, self.shape)


def to_wire(values: Values, element_type_: Optional[ElementTypeLike] = None, shape: Optional[Sequence[int]] = None) -> Wire:
    """Converts a numpy array, array.array, memoryview or Param into wire form. The shape is the
    array's own (a 1-D array's is (n,)), unless `shape` (or the Param's) says otherwise; an
    array.array or a 1-D memoryview is a flat buffer (`shaped` False)."""
    if isinstance(values, Param):
        return to_wire(values.values, values.element_type, values.shape)
    forced = element_type(element_type_) if element_type_ is not None else None
    if np is not None and isinstance(values, (np.ndarray, np.generic, list, tuple)):
        arr = np.asarray(values)
        if forced is not None and arr.dtype.kind in "iuf" and np.dtype(_NUMPY_DTYPE[forced]).kind != arr.dtype.kind:
            arr = arr.astype(_NUMPY_DTYPE[forced])
        et = forced if forced is not None else _BY_KIND.get((arr.dtype.kind, arr.dtype.itemsize))
        if et is None:
            raise TypeError(f"unsupported dtype {arr.dtype} (give element_type for bfloat16 bits)")
        if arr.dtype.itemsize != ELEMENT_SIZE[et]:
            raise TypeError(f"{arr.dtype} does not hold {ElementType.Name(et)}")
        little = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"), copy=False)).reshape(-1)
        whole = tuple(int(d) for d in (shape if shape is not None else arr.shape))
        return Wire(little.view(np.uint8).data, et, int(little.size), whole)
    if isinstance(values, array.array):
        values = memoryview(values)
    if isinstance(values, memoryview):
        fmt = values.format.lstrip("<=@")
        et = forced if forced is not None else _BY_KIND.get((_FORMAT_KIND.get(fmt, "?"), values.itemsize))
        if et is None or ELEMENT_SIZE[et] != values.itemsize:
            raise TypeError(f"unsupported memoryview format {values.format!r}")
        raw = values.cast("B") if values.c_contiguous else memoryview(values.tobytes())
        if sys.byteorder == "big" and values.itemsize > 1:
            swapped = array.array({2: "H", 4: "I", 8: "Q"}[values.itemsize], raw.tobytes())
            swapped.byteswap()
            raw = memoryview(swapped).cast("B")
        length = len(raw) // values.itemsize
        if shape is not None:
            return Wire(raw, et, length, tuple(int(d) for d in shape))
        own = tuple(values.shape or ())
        return Wire(raw, et, length, own if len(own) > 1 else (length,), shaped=len(own) > 1)
    raise TypeError(f"tensor values must be a numpy array, array.array or memoryview, not {type(values).__name__}")


def from_wire(data: Union[bytes, bytearray, memoryview], element_type_: int, shape: Sequence[int] = ()) -> Any:
    """Converts little-endian bytes into a numpy array (reshaped to `shape`) or an array.array."""
    if np is not None:
        # Over a bytearray (what get_params assembles) the array shares its memory: no copy of a
        # large tensor. Read-only bytes, or a big-endian host, make a copy.
        arr = np.frombuffer(data, dtype=_NUMPY_DTYPE[element_type_])
        native = arr.dtype.newbyteorder("=")
        if sys.byteorder == "little" and arr.flags.writeable:
            arr = arr.view(native)
        else:
            arr = arr.astype(native)
        return arr.reshape(tuple(shape)) if shape else arr
    out = array.array(_ARRAY_TYPECODE[element_type_])
    out.frombytes(bytes(data))
    if sys.byteorder == "big":
        out.byteswap()
    return out
