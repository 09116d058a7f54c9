"""Arrays in, arrays out: numpy arrays when numpy is importable, `array.array`/`memoryview`
otherwise, converted to and from the wire form (little-endian bytes, row-major, with an
ElementType). FLOAT16 is numpy's float16; BFLOAT16 travels as raw uint16 bits (numpy has no
bfloat16), so say `Param(bits, element_type="BFLOAT16")` for it.
"""

import array
import sys
from dataclasses import dataclass

from ._proto.pserver.v1 import tensor_pb2

try:  # numpy is optional: the client works with array.array and memoryview without it.
    import numpy as np
except ImportError:  # pragma: no cover - exercised only where numpy is missing
    np = None

ElementType = tensor_pb2.ElementType

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


def element_type(value):
    """An ElementType from its value, its full name or its short name ("FLOAT32")."""
    if isinstance(value, int):
        return value
    name = value if value.startswith("ELEMENT_TYPE_") else "ELEMENT_TYPE_" + value.upper()
    return ElementType.Value(name)


@dataclass
class Param:
    """Values with what the array cannot say: a shape, or an element type (BFLOAT16)."""

    values: object
    shape: tuple = None
    element_type: object = None


@dataclass
class Wire:
    """A whole tensor in wire form: little-endian bytes, element type, length, shape."""

    data: memoryview
    element_type: int
    length: int
    shape: tuple

    def block(self, start, end):
        """The bytes of elements [start, end) (a view, no copy)."""
        size = ELEMENT_SIZE[self.element_type]
        return self.data[start * size : end * size]


def to_wire(values, element_type_=None, shape=None):
    """Converts a numpy array, array.array, memoryview or Param into wire form."""
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
        if shape is None and arr.ndim > 1:
            shape = arr.shape
        return Wire(memoryview(little.view(np.uint8)), et, little.size, tuple(shape or ()))
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
        return Wire(raw, et, length, tuple(shape or ()))
    raise TypeError(f"tensor values must be a numpy array, array.array or memoryview, not {type(values).__name__}")


def allocate(spec):
    """A zeroed bytearray for a whole tensor of `spec` (a Wire-like with element_type, length)."""
    return bytearray(spec.length * ELEMENT_SIZE[spec.element_type])


def from_wire(data, element_type_, shape=()):
    """Converts little-endian bytes into a numpy array (reshaped to `shape`) or an array.array."""
    if np is not None:
        arr = np.frombuffer(bytes(data), dtype=_NUMPY_DTYPE[element_type_])
        arr = arr.astype(arr.dtype.newbyteorder("="))
        return arr.reshape(shape) if shape else arr
    out = array.array(_ARRAY_TYPECODE[element_type_])
    out.frombytes(bytes(data))
    if sys.byteorder == "big":
        out.byteswap()
    return out
