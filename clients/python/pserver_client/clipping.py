"""Global-norm clipping of a step's dense gradients, in wire form: the rule of proto/README.md
("Global-norm clipping"), which the TypeScript and Go clients follow bit for bit and
proto/testdata/clipping.json pins.

Only FLOAT32 and FLOAT64 gradients count and are scaled. The squares are added one at a time in a
double, tensors in name order (code points) and elements in index order: the sum's rounding then
depends on nothing a client may do differently (numpy's own sum adds in pairs, a dict keeps the
order a trainer chose). Each scaled element is its double product rounded to its type.
"""

from __future__ import annotations

import array
import math
import numbers
import sys
from typing import Any, Mapping

from . import codes
from ._proto.pserver.v1 import tensor_pb2
from .errors import ClientError
from .tensors import Wire

try:  # numpy is optional: without it the same arithmetic runs on array.array, slower.
    import numpy as np
except ImportError:  # pragma: no cover - exercised only where numpy is missing
    np = None  # type: ignore[assignment]

#: The element types clipping counts and scales: numpy dtype and array typecode of each.
_FLOATS = {
    tensor_pb2.ElementType.ELEMENT_TYPE_FLOAT32: ("<f4", "f"),
    tensor_pb2.ElementType.ELEMENT_TYPE_FLOAT64: ("<f8", "d"),
}
#: Squares added per numpy call: bounds the memory of the running sums to 8 MiB.
_CHUNK = 1 << 20


def max_norm_option(option: str, value: Any) -> float:
    """`value` as a float if it is a finite number > 0 (a bound of 0 would zero every gradient, a
    negative one flip them), else CLIENT_INVALID_OPTIONS naming the option and the value."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and float(value) > 0:
        return float(value)
    raise ClientError(codes.CLIENT_INVALID_OPTIONS, f"{option}: must be a finite number > 0, got {value!r}")


def global_norm(grads: Mapping[str, Wire]) -> float:
    """The L2 norm of the FLOAT32 and FLOAT64 gradients together, by the rule above."""
    total = 0.0
    for name in sorted(grads):
        wire = grads[name]
        if wire.element_type not in _FLOATS:
            continue
        if np is None:
            for x in _values(wire):
                total += x * x
            continue
        squares = np.square(np.frombuffer(wire.data, dtype=_FLOATS[wire.element_type][0]).astype(np.float64))
        for start in range(0, squares.size, _CHUNK):
            # cumsum adds one element at a time, in order: its last running sum is the rule's.
            total = float(np.cumsum(np.concatenate((np.array([total]), squares[start : start + _CHUNK])))[-1])
    return math.sqrt(total)


def clip_by_global_norm(grads: Mapping[str, Wire], max_norm: float) -> dict[str, Wire]:
    """The gradients scaled by max_norm / norm when their global norm is above max_norm (a NaN
    norm is not), else as given."""
    norm = global_norm(grads)
    if not norm > max_norm:
        return dict(grads)
    scale = max_norm / norm
    return {name: _scaled(wire, scale) if wire.element_type in _FLOATS else wire for name, wire in grads.items()}


def _values(wire: Wire) -> array.array:  # type: ignore[type-arg]
    out = array.array(_FLOATS[wire.element_type][1], bytes(wire.data))
    if sys.byteorder == "big":
        out.byteswap()
    return out


def _scaled(wire: Wire, scale: float) -> Wire:
    if np is None:
        # An array of "f" stores a double rounded to nearest, as numpy's astype does.
        out = array.array(_FLOATS[wire.element_type][1], (x * scale for x in _values(wire)))
        if sys.byteorder == "big":
            out.byteswap()
        data = memoryview(out).cast("B")
    else:
        dtype = _FLOATS[wire.element_type][0]
        values = np.frombuffer(wire.data, dtype=dtype).astype(np.float64) * scale
        data = values.astype(dtype).view(np.uint8).data
    return Wire(data, wire.element_type, wire.length, wire.shape, wire.shaped)
