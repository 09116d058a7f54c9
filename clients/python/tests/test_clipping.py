"""Global-norm clipping against proto/testdata/clipping.json, the vectors every client checks:
the norm and every byte of the clipped gradients, with numpy and without it; and the client's
option, applied to a step's push."""

import array
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO_ROOT
from fake_shards import fake_client
from pserver_client import ClientError, Param, codes, clipping
from pserver_client.clipping import clip_by_global_norm, global_norm
from pserver_client.tensors import to_wire

TESTDATA = os.path.join(REPO_ROOT, "proto", "testdata")
with open(os.path.join(TESTDATA, "clipping.json"), encoding="utf-8") as f:
    VECTORS = json.load(f)["vectors"]

DTYPES = {"ELEMENT_TYPE_FLOAT32": "<f4", "ELEMENT_TYPE_FLOAT64": "<f8", "ELEMENT_TYPE_INT32": "<i4", "ELEMENT_TYPE_FLOAT16": "<f2"}
#: array.array has no float16: its values are raw bits, given with their element type.
TYPECODES = {"ELEMENT_TYPE_FLOAT32": "f", "ELEMENT_TYPE_FLOAT64": "d", "ELEMENT_TYPE_INT32": "i", "ELEMENT_TYPE_FLOAT16": "H"}


def numpy_wires(vector):
    return {g["name"]: to_wire(np.frombuffer(bytes.fromhex(g["contentHex"]), DTYPES[g["elementType"]])) for g in vector["grads"]}


def array_wires(vector):
    out = {}
    for g in vector["grads"]:
        values = array.array(TYPECODES[g["elementType"]])
        values.frombytes(bytes.fromhex(g["contentHex"]))
        if sys.byteorder == "big":
            values.byteswap()
        out[g["name"]] = to_wire(Param(values, element_type=g["elementType"]))
    return out


@pytest.mark.parametrize("vector", VECTORS, ids=[v["title"] for v in VECTORS])
@pytest.mark.parametrize("with_numpy", [True, False], ids=["numpy", "array"])
def test_clipping_is_the_vectors_bit_for_bit(vector, with_numpy, monkeypatch):
    if not with_numpy:
        monkeypatch.setattr(clipping, "np", None)
    wires = numpy_wires(vector) if with_numpy else array_wires(vector)
    assert global_norm(wires) == vector["norm"]
    clipped = clip_by_global_norm(wires, vector["maxNorm"])
    assert list(clipped) == [g["name"] for g in vector["grads"]]
    for g in vector["grads"]:
        assert bytes(clipped[g["name"]].data).hex() == g["clippedHex"], g["name"]


def test_the_vectors_pin_what_they_say():
    titles = " | ".join(v["title"] for v in VECTORS)
    for pinned in ("name order", "one at a time", "code point order", "not multiplied in float32", "unchanged", "neither counted"):
        assert pinned in titles
    assert any(v["clipped"] for v in VECTORS) and any(not v["clipped"] for v in VECTORS)


def test_committed_vectors_are_the_generators_output():
    run = subprocess.run([sys.executable, os.path.join(TESTDATA, "generate_clipping.py")], capture_output=True, check=True)
    with open(os.path.join(TESTDATA, "clipping.json"), "rb") as committed:
        assert run.stdout == committed.read(), "run: python3 proto/testdata/generate_clipping.py > proto/testdata/clipping.json"


def test_a_step_pushes_its_gradients_clipped_together():
    [vector] = [v for v in VECTORS if v["title"].startswith("float32 and float64 together")]
    client = fake_client(shards=2, block_size=4, global_clip_norm=vector["maxNorm"])
    try:
        grads = {g["name"]: np.frombuffer(bytes.fromhex(g["contentHex"]), DTYPES[g["elementType"]]) for g in vector["grads"]}
        client.init_params({name: np.zeros_like(values) for name, values in grads.items()})
        client.step(lambda ctx: ctx.send_grads(grads))
        sent = {}
        for method, _, request in client.calls.sent:
            for t in request.grads if method == "SendGrads" else ():
                name, _, block = t.name.partition("@")
                sent.setdefault(name, {})[int(block or 0)] = t.content
        assert {name: b"".join(blocks[k] for k in sorted(blocks)).hex() for name, blocks in sent.items()} == {
            g["name"]: g["clippedHex"] for g in vector["grads"]
        }
    finally:
        client.close()


@pytest.mark.parametrize("bound", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_a_bound_that_is_not_a_finite_positive_number_is_refused(bound):
    with pytest.raises(ClientError) as caught:
        fake_client(global_clip_norm=bound)
    assert caught.value.code == codes.CLIENT_INVALID_OPTIONS
    assert "global_clip_norm" in str(caught.value) and repr(bound) in str(caught.value)
