"""The README's PyTorch quick start, run as written against a real cluster: the first Python
block of its "PyTorch quick start" section, as a program of its own with PSERVER_MASTER naming the masters."""

import os
import re
import subprocess
import sys

import pytest

import pserver_client

pytestmark = pytest.mark.integration

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "README.md")


def quick_start() -> str:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("\n## PyTorch quick start\n") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the PyTorch quick start has no Python block"
    return match.group(1)


def test_the_pytorch_quick_start_runs_as_written(cluster):
    env = {
        **os.environ,
        "PSERVER_MASTER": ",".join(cluster.masters),
        "PYTHONPATH": os.path.join(HERE, ".."),
    }
    run = subprocess.run(
        [sys.executable, "-c", quick_start()], env=env, capture_output=True, text=True, timeout=180
    )
    # Each `client.step` returns only once its push was acknowledged by every shard it went to.
    assert run.returncode == 0, run.stderr[-2000:]
    # What it declared is on the pservers: the table and the head's parameters.
    with pserver_client.connect(master=cluster.masters, name="quick-start-reader") as client:
        assert list(client.tables()) == ["emb"]
        assert set(client.list_params()) == {"0.weight", "0.bias", "2.weight", "2.bias"}
