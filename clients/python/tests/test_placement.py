"""The placement rules against proto/testdata/placement.json and table_placement.json, the vectors
every client checks, and the committed vectors against their generators."""

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from pserver_client import (
    MAX_TABLE_BUCKETS,
    bucket_of_id,
    buckets_of_ids,
    fnv1a64,
    jump_hash,
    place_tensor,
    table_shard_of,
    table_shards,
)
from pserver_client.placement import fmix32
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


# --- sparse tables: proto/testdata/table_placement.json ---------------------------------------

with open(os.path.join(REPO_ROOT, "proto", "testdata", "table_placement.json"), encoding="utf-8") as f:
    TABLE_VECTORS = json.load(f)


@pytest.mark.parametrize(
    "generator, output",
    [("generate_placement.py", "placement.json"), ("generate_table_placement.py", "table_placement.json")],
)
def test_committed_vectors_are_the_generators_output(generator, output):
    testdata = os.path.join(REPO_ROOT, "proto", "testdata")
    run = subprocess.run(
        [sys.executable, os.path.join(testdata, generator)], capture_output=True, check=True
    )
    with open(os.path.join(testdata, output), "rb") as committed:
        assert run.stdout == committed.read(), f"run: python3 proto/testdata/{generator} > proto/testdata/{output}"


def test_table_vectors_hold_the_edge_ids():
    assert TABLE_VECTORS["max_buckets"] == MAX_TABLE_BUCKETS
    ids = {int(c["id"]) for c in TABLE_VECTORS["ids"]}
    assert {0, 1, -1, 2**31, 2**32, 2**53 + 1, -(2**63), 2**63 - 1} <= ids


def test_fmix32_vectors():
    assert fmix32(1) == 0x514E28B7  # MurmurHash3's own value
    for case in TABLE_VECTORS["fmix32"]:
        assert fmix32(case["input"]) == case["output"], case


@pytest.mark.parametrize("case", TABLE_VECTORS["ids"], ids=lambda c: c["id"])
def test_bucket_of_id_vectors(case):
    i = int(case["id"])
    lo, hi = struct.unpack("<II", struct.pack("<q", i))
    assert (lo, hi) == (case["lo"], case["hi"])
    for c in case["buckets"]:
        assert bucket_of_id(i, c["buckets"]) == c["bucket"], c
        assert bucket_of_id(np.int64(i), c["buckets"]) == c["bucket"], c


@pytest.mark.parametrize("buckets", [c["buckets"] for c in TABLE_VECTORS["ids"][0]["buckets"]])
def test_buckets_of_ids_vectors(buckets):
    ids = np.array([int(c["id"]) for c in TABLE_VECTORS["ids"]], dtype=np.int64)
    want = [next(b["bucket"] for b in c["buckets"] if b["buckets"] == buckets) for c in TABLE_VECTORS["ids"]]
    got = buckets_of_ids(ids, buckets)
    assert got.dtype == np.uint32 and got.tolist() == want
    # The same ids as uint64 (their bits), in a 2-D array (same shape out), and every other one.
    assert buckets_of_ids(ids.view(np.uint64), buckets).tolist() == want
    assert buckets_of_ids(ids.reshape(-1, 2), buckets).tolist() == np.reshape(want, (-1, 2)).tolist()
    assert buckets_of_ids(ids[::2], buckets).tolist() == want[::2]


@pytest.mark.parametrize("case", TABLE_VECTORS["tables"], ids=lambda c: f"{c['name']} B={c['buckets']} N={c['shards']}")
def test_table_shards_vectors(case):
    assert table_shards(case["name"], case["buckets"], case["shards"]) == case["bucket_shards"]


@pytest.mark.parametrize(
    "case", TABLE_VECTORS["id_shards"], ids=lambda c: f"{c['name']} B={c['buckets']} N={c['shards']}"
)
def test_shards_of_ids_vectors(case):
    buckets = buckets_of_ids(np.array([int(i) for i in case["ids"]], dtype=np.int64), case["buckets"])
    assert [table_shard_of(case["name"], int(b), case["shards"]) for b in buckets] == case["id_shards"]


def test_table_shards_places_bucket_b_as_the_block_table_at_b():
    shards = table_shards("emb", 4096, 7)
    assert len(shards) == 4096
    assert all(shards[b] == table_shard_of("emb", b, 7) for b in (0, 9, 10, 99, 100, 999, 1000, 4095))
    assert set(table_shards("emb", 1024, 5)) == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("buckets", [0, 3, 1000, 2**25, -4, True, 16.0])
def test_table_functions_reject_bad_bucket_counts(buckets):
    for call in (
        lambda: bucket_of_id(1, buckets),
        lambda: buckets_of_ids(np.zeros(2, np.int64), buckets),
        lambda: table_shards("emb", buckets, 2),
    ):
        with pytest.raises(ValueError, match=r"buckets must be a power of two in \[1, 2\^24\]"):
            call()


def test_table_functions_reject_ids_that_are_not_int64():
    with pytest.raises(ValueError, match="signed 64-bit"):
        bucket_of_id(2**63, 16)
    with pytest.raises(ValueError, match="signed 64-bit"):
        bucket_of_id(-(2**63) - 1, 16)
    with pytest.raises(TypeError):
        bucket_of_id(1.0, 16)
    with pytest.raises(TypeError, match="must be integers"):
        buckets_of_ids(np.array([1.5]), 16)
