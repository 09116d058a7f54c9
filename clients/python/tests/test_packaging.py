"""The package as pip builds it: a wheel of `pserver_client` with complete metadata (license,
readme, classifiers, the extras) and its generated stubs and type-hint marker, built from a copy
of the project so the working tree is left as it was."""

import email
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def test_the_wheel_carries_the_packages_metadata_and_files(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(
        PROJECT,
        source,
        ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__", ".mypy_cache"),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(source)],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("pserver_client-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(z.read(metadata_name))
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
