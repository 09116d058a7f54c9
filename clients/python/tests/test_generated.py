"""The generated stubs in pserver_client/_proto are what `generate` makes from proto/ now."""

import filecmp
import os
import subprocess
import sys

from conftest import CLIENT_ROOT


def listing(root):
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in files:
            if not f.endswith(".pyc"):
                out[os.path.relpath(os.path.join(folder, f), root)] = os.path.join(folder, f)
    return out


def test_stubs_are_fresh(tmp_path):
    subprocess.run(
        [sys.executable, os.path.join(CLIENT_ROOT, "scripts", "generate.py"), str(tmp_path)], check=True
    )
    fresh = listing(str(tmp_path))
    kept = listing(os.path.join(CLIENT_ROOT, "pserver_client", "_proto"))
    assert sorted(kept) == sorted(fresh), "run `npx nx run client-python:generate`"
    stale = [name for name in fresh if not filecmp.cmp(fresh[name], kept[name], shallow=False)]
    assert stale == [], f"stale generated files {stale}: run `npx nx run client-python:generate`"


def test_generated_modules_import_relatively():
    from pserver_client._proto.pserver.v1 import parameter_server_pb2_grpc

    assert hasattr(parameter_server_pb2_grpc, "ParameterServerStub")
    assert "pserver" not in sys.modules or not hasattr(sys.modules["pserver"], "v1")
