"""The public API in Python's idiom: snake_case dicts (camelCase still taken), type hints checked
by mypy --strict, a py.typed marker in the package, one version."""

import inspect
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

import pserver_client
from pserver_client import dataset_request, optimizer_config
from conftest import CLIENT_ROOT


@pytest.mark.parametrize(
    "snake,camel",
    [
        (
            {"adam": {"weight_decay": 0.01}, "learning_rate": {"base": 1e-3}},
            {"adam": {"weightDecay": 0.01}, "learningRate": {"base": 1e-3}},
        ),
        (
            {"sgd": {"momentum": 0.9}, "learning_rate": {"base": 0.1, "step": {"step_size": 100, "gamma": 0.5}},
             "clip_norm": 1.0, "non_finite": "NON_FINITE_POLICY_SKIP"},
            {"sgd": {"momentum": 0.9}, "learningRate": {"base": 0.1, "step": {"stepSize": 100, "gamma": 0.5}},
             "clipNorm": 1.0, "nonFinite": "NON_FINITE_POLICY_SKIP"},
        ),
    ],
)
def test_optimizer_configs_in_snake_case_and_camel_case(snake, camel):
    config = optimizer_config(snake)
    assert config == optimizer_config(camel)
    assert config.learning_rate.base == snake["learning_rate"]["base"]
    assert config.WhichOneof("algorithm") == next(iter(snake))


def test_datasets_in_snake_case_and_camel_case():
    snake = dataset_request(files={"globs": ["/data/*.csv"], "task_bytes": 1 << 20})
    assert snake == dataset_request(files={"globs": ["/data/*.csv"], "taskBytes": 1 << 20})
    assert snake.files.task_bytes == 1 << 20
    records = dataset_request({"records": {"records": 10, "task_records": 2}})
    assert records.records.task_records == 2 == dataset_request(records={"records": 10, "taskRecords": 2}).records.task_records


def test_one_version():
    with open(os.path.join(CLIENT_ROOT, "pyproject.toml"), encoding="utf-8") as f:
        pyproject = f.read()
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "pserver_client._version.__version__" }' in pyproject
    assert re.fullmatch(r"\d+\.\d+\.\d+", pserver_client.__version__)


def test_the_wheel_holds_py_typed_and_the_version(tmp_path):
    # setuptools' PEP 517 backend without a network (no pip, no isolation), on a copy of the
    # project: building in place would write build/ into the tree other tasks read meanwhile.
    source = tmp_path / "source"
    shutil.copytree(
        CLIENT_ROOT,
        source,
        ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"),
    )
    build = (
        "import sys, setuptools.build_meta as b;"
        f"print(b.build_wheel({str(tmp_path)!r}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", build], cwd=source, capture_output=True, text=True, check=True
    ).stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(tmp_path / out) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "pserver_client/py.typed" in names
    assert "pserver_client/_proto/pserver/v1/errors_pb2.py" in names
    assert f"\nVersion: {pserver_client.__version__}\n" in metadata


def public_callables():
    for name in pserver_client.__all__:
        value = getattr(pserver_client, name)
        if inspect.isclass(value):
            for attr, member in vars(value).items():
                if inspect.isfunction(member) and (not attr.startswith("_") or attr == "__init__"):
                    yield f"{name}.{attr}", member
        elif inspect.isfunction(value):
            yield name, value


def test_every_public_function_and_method_has_type_hints():
    missing = []
    for name, fn in public_callables():
        signature = inspect.signature(fn)
        params = [p for p in signature.parameters.values() if p.name not in ("self", "cls")]
        if any(p.annotation is inspect.Parameter.empty for p in params):
            missing.append(name)
        elif signature.return_annotation is inspect.Signature.empty:
            missing.append(f"{name} (return)")
    assert missing == []
    assert len(dict(public_callables())) > 20


def test_mypy_strict_passes_on_the_package(tmp_path):
    # Debian's mypy (`apt-get install mypy`); the settings are pyproject.toml's [tool.mypy].
    result = subprocess.run(
        # Its cache goes to the test's temporary directory, not into the source tree.
        ["mypy", "--strict", "--cache-dir", str(tmp_path / "mypy-cache"), "pserver_client"],
        cwd=CLIENT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
