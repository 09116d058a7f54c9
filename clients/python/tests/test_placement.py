"""The placement rule against proto/testdata/placement.json, the vectors every client checks."""

import json
import os

import pytest

from pserver_client import fnv1a64, jump_hash, place_tensor
from conftest import REPO_ROOT

with open(os.path.join(REPO_ROOT, "proto", "testdata", "placement.json"), encoding="utf-8") as f:
    VECTORS = json.load(f)


@pytest.mark.parametrize("case", VECTORS["fnv1a64"], ids=lambda c: repr(c["input"]))
def test_fnv1a64(case):
    assert fnv1a64(case["input"].encode("utf-8")) == int(case["hash"], 16)


def test_jump_hash_vectors():
    assert len(VECTORS["jump"]) > 10
    for case in VECTORS["jump"]:
        assert jump_hash(int(case["key"], 16), case["buckets"]) == case["bucket"], case


def test_placement_vectors():
    assert len(VECTORS["placement"]) >= 32
    for case in VECTORS["placement"]:
        blocks = place_tensor(case["name"], case["elements"], case["block_size"], case["shards"])
        got = [{"name": b.name, "start": b.start, "end": b.end, "shard": b.shard} for b in blocks]
        assert got == case["blocks"], case


def test_jump_hash_rejects_bad_bucket_counts():
    with pytest.raises(ValueError):
        jump_hash(1, 0)
    with pytest.raises(ValueError):
        jump_hash(1, 2**31)
