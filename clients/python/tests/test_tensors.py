"""Arrays ↔ wire bytes, for every element type, with numpy and with array.array."""

import array

import numpy as np
import pytest

from pserver_client import ClientError, ElementType, Param, PserverError, is_retryable, is_stale
from pserver_client.tensors import from_wire, to_wire


@pytest.mark.parametrize(
    "dtype,element_type",
    [
        ("int32", ElementType.ELEMENT_TYPE_INT32),
        ("uint32", ElementType.ELEMENT_TYPE_UINT32),
        ("int64", ElementType.ELEMENT_TYPE_INT64),
        ("uint64", ElementType.ELEMENT_TYPE_UINT64),
        ("float32", ElementType.ELEMENT_TYPE_FLOAT32),
        ("float64", ElementType.ELEMENT_TYPE_FLOAT64),
        ("float16", ElementType.ELEMENT_TYPE_FLOAT16),
    ],
)
def test_numpy_round_trip(dtype, element_type):
    values = np.arange(6, dtype=dtype).reshape(2, 3)
    wire = to_wire(values)
    assert (wire.element_type, wire.length, wire.shape) == (element_type, 6, (2, 3))
    assert bytes(wire.data) == values.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
    back = from_wire(wire.data, element_type, wire.shape)
    assert back.dtype == np.dtype(dtype) and np.array_equal(back, values)


def test_big_endian_input_is_sent_little_endian():
    values = np.array([1.5, -2.0], dtype=">f4")
    assert bytes(to_wire(values).data) == np.array([1.5, -2.0], dtype="<f4").tobytes()


def test_bfloat16_travels_as_raw_uint16_bits():
    bits = np.array([0x3F80, 0xC000], dtype=np.uint16)
    with pytest.raises(TypeError):
        to_wire(bits)
    wire = to_wire(Param(bits, element_type="BFLOAT16"))
    assert wire.element_type == ElementType.ELEMENT_TYPE_BFLOAT16
    assert bytes(wire.data) == bytes.fromhex("803f00c0")


def test_array_module_and_memoryview():
    wire = to_wire(array.array("d", [1.0, 2.0]))
    assert wire.element_type == ElementType.ELEMENT_TYPE_FLOAT64 and wire.length == 2
    wire = to_wire(memoryview(array.array("i", [7, -1])))
    assert wire.element_type == ElementType.ELEMENT_TYPE_INT32
    assert bytes(wire.data) == bytes.fromhex("07000000ffffffff")


def test_block_slices_elements():
    wire = to_wire(np.arange(10, dtype=np.float32))
    assert bytes(wire.block(4, 8)) == np.arange(4, 8, dtype="<f4").tobytes()


def test_error_classification():
    assert is_stale(PserverError("ABORTED", "stale", code="PSERVER_STALE_EPOCH"))
    assert is_stale(ClientError("CLIENT_STALE_VIEW", "x"))
    assert not is_stale(PserverError("INVALID_ARGUMENT", "bad", code="PSERVER_LENGTH_MISMATCH"))
    assert is_retryable(PserverError("UNAVAILABLE", "connection refused"))
    assert is_retryable(PserverError("RESOURCE_EXHAUSTED", "busy", code="PSERVER_OVERLOADED"))
    assert not is_retryable(PserverError("UNAVAILABLE", "fenced", code="PSERVER_FENCED"))
    assert not is_retryable(PserverError("NOT_FOUND", "x", code="PSERVER_UNKNOWN_TENSOR"))
