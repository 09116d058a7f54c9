"""The package as pip builds it: a wheel of `pserver_client` with complete metadata (license,
readme, classifiers, the extras) and its generated stubs and type-hint marker, built from a copy
of the project so the working tree is left as it was; and extras that install what their modules
import."""

import ast
import email
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
PACKAGE = PROJECT / "pserver_client"

#: The distribution that installs each third-party module the package imports. A new import
#: belongs here and in pyproject.toml (the dependencies, or the extra of its module).
DISTRIBUTIONS = {"grpc": "grpcio", "google": "protobuf", "numpy": "numpy", "torch": "torch"}


def extra_of(module):
    """The extra that installs what `module` imports beyond the dependencies: `torch` for the
    PyTorch adapter (pserver_client/torch*.py), `numpy` for the rest (which runs without numpy
    and takes numpy arrays when it is there)."""
    return "torch" if module.name.startswith("torch") else "numpy"


@pytest.fixture(scope="module")
def wheel_file(tmp_path_factory):
    """The wheel pip builds of the project."""
    out = tmp_path_factory.mktemp("wheel")
    source = out / "src"
    shutil.copytree(
        PROJECT,
        source,
        ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__", ".mypy_cache"),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
        timeout=300,
    )
    (path,) = out.glob("pserver_client-*.whl")
    return path


@pytest.fixture(scope="module")
def wheel(wheel_file):
    """The wheel's file names and its metadata."""
    with zipfile.ZipFile(wheel_file) as z:
        names = z.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        return names, email.message_from_bytes(z.read(metadata_name))


def test_the_wheel_carries_the_packages_metadata_and_files(wheel):
    names, metadata = wheel
    assert metadata["Name"] == "pserver-client"
    # One version for the project: the Python client's is the root package.json's.
    assert metadata["Version"] == json.loads((PROJECT.parents[1] / "package.json").read_text())["version"]
    assert metadata["License"] == "Apache-2.0"
    assert "License :: OSI Approved :: Apache Software License" in metadata.get_all("Classifier")
    assert "Typing :: Typed" in metadata.get_all("Classifier")
    assert metadata["Author"]
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert "pip install" in metadata.get_payload(), "the README is the package's long description"
    assert set(metadata.get_all("Provides-Extra")) == {"numpy", "torch"}
    assert "pserver_client/py.typed" in names
    assert "pserver_client/torch.py" in names
    assert any(n.startswith("pserver_client/_proto/pserver/v1/") for n in names)
    assert not any(n.startswith("tests/") for n in names)


def third_party_imports(path):
    """The top-level names of the modules `path` imports that are neither the standard library's
    nor the package's own: every import, also one inside a function, a `try` or `TYPE_CHECKING`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"__future__", "pserver_client"}


def requirements(metadata):
    """The wheel's requirements: the dependencies under "", each extra's under its name."""
    out = {}
    for line in metadata.get_all("Requires-Dist") or []:
        name = re.match(r"[A-Za-z0-9._-]+", line).group(0).lower()
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", line)
        out.setdefault(extra.group(1) if extra else "", set()).add(name)
    return out


def imports_by_extra():
    """The distributions each extra's modules import: {extra: {distribution: [module, ...]}}."""
    out = {}
    for path in sorted(PACKAGE.glob("*.py")):
        for name in sorted(third_party_imports(path)):
            assert name in DISTRIBUTIONS, f"{path.name} imports {name}: add its distribution to DISTRIBUTIONS"
            out.setdefault(extra_of(path), {}).setdefault(DISTRIBUTIONS[name], []).append(path.name)
    return out


def test_each_extra_installs_every_third_party_module_its_modules_import(wheel):
    _, metadata = wheel
    required = requirements(metadata)
    base = required.get("", set())
    used = imports_by_extra()
    for extra, imported in used.items():
        missing = {d: modules for d, modules in imported.items() if d not in base | required.get(extra, set())}
        assert missing == {}, f"the {extra} extra lacks what its modules import (distribution: modules)"
    # And no extra lists what none of its modules imports.
    for extra in set(required) - {""}:
        assert required[extra] - set(used.get(extra, {})) == set(), f"the {extra} extra lists what nothing imports"


def test_the_torch_extra_installs_into_a_fresh_environment_and_its_module_imports(wheel_file, tmp_path):
    """`pip install "pserver-client[torch]"` into a new virtual environment over Debian's packages
    (no index: every requirement must be met by what is installed), then the PyTorch adapter
    imported from the environment, not from the source tree."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "--no-index", "-q", f"{wheel_file}[torch]"],
        check=True,
        timeout=300,
    )
    imported = subprocess.run(
        [python, "-c", "import pserver_client, pserver_client.torch; print(pserver_client.torch.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip().startswith(str(venv)), imported.stdout
