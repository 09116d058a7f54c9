"""The error contract: codes from proto/pserver/v1/errors.proto's ErrorCode, the predicates every
client offers, and gRPC's own size limit raised at once as CLIENT_MESSAGE_TOO_LARGE."""

import ast
import json
import os
import time

import grpc
import numpy as np
import pytest

from fake_shards import FakeRpcError, fake_client
from pserver_client import (
    ClientError,
    PserverError,
    client_action_of,
    codes,
    is_refused,
    is_retryable,
    is_shard_unavailable,
    is_stale,
)
from pserver_client._proto.pserver.v1 import tensor_pb2
from pserver_client._proto.pserver.v1.errors_pb2 import ErrorCode
from pserver_client.errors import call, error_of, is_resend_step
from conftest import CLIENT_ROOT, REPO_ROOT

PACKAGE = os.path.join(CLIENT_ROOT, "pserver_client")

# The contract's rules as written, read as every client's tests read them.
with open(os.path.join(REPO_ROOT, "proto", "testdata", "error_codes.json"), encoding="utf-8") as f:
    RULES = json.load(f)

# A code of a server newer than this client.
NEWER_CODE = "PSERVER_NEWER_THAN_THIS_CLIENT"


def test_every_code_of_the_enum_is_a_constant_of_its_name():
    names = [n for n in ErrorCode.keys() if n != "ERROR_CODE_UNSPECIFIED"]
    assert "CLIENT_MESSAGE_TOO_LARGE" in names and "PSERVER_SHAPE_MISMATCH" in names
    assert {getattr(codes, n) for n in names} == set(names) == codes.ALL
    assert codes.name_of(ErrorCode.MASTER_SESSION_EXPIRED) == "MASTER_SESSION_EXPIRED"
    with pytest.raises(AttributeError):
        codes.MASTER_SESSION_EXPIRD  # noqa: B018 - a typo fails loudly


def test_no_module_of_the_package_spells_a_code_out():
    # Codes come from the enum (pserver_client.codes), so the three clients cannot drift.
    names = set(ErrorCode.keys())
    spelled = []
    for file in sorted(os.listdir(PACKAGE)):
        if not file.endswith(".py"):
            continue
        with open(os.path.join(PACKAGE, file), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        spelled += [
            f"{file}:{node.lineno}: {node.value}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
        ]
    assert spelled == []


def assert_action(err, action):
    """`err`'s action is `action`, and each predicate is true exactly for the actions it names."""
    assert client_action_of(err) == action
    assert {
        "retryable": is_retryable(err),
        "stale": is_stale(err),
        "resend_step": is_resend_step(err),
        "shard_unavailable": is_shard_unavailable(err),
        "refused": is_refused(err),
    } == {
        "retryable": action in ("RETRY", "BACK_OFF"),
        "stale": action == "RERUN_STEP",
        "resend_step": action == "RESEND_PREVIOUS_STEP",
        "shard_unavailable": action == "WAIT_FOR_SHARD",
        "refused": action == "REFUSED",
    }


def test_the_rules_cover_every_code_of_the_enum():
    assert list(RULES["codes"]) == [n for n in ErrorCode.keys() if n != "ERROR_CODE_UNSPECIFIED"]


@pytest.mark.parametrize("code", list(RULES["codes"]))
def test_the_action_on_each_code_is_the_contracts(code):
    rule = RULES["codes"][code]
    if rule["status"] is None:
        assert_action(ClientError(code, "x"), rule["action"])
    else:
        assert_action(PserverError(rule["status"], "x", code=code), rule["action"])


@pytest.mark.parametrize("status", list(RULES["statuses"]))
def test_the_action_on_a_status_without_a_code_or_with_a_newer_one_is_the_contracts(status):
    rule = RULES["statuses"][status]
    assert_action(PserverError(status, "x"), rule["without_code"])
    assert_action(PserverError(status, "x", code=NEWER_CODE), rule["unknown_code"])


def test_an_error_that_is_neither_a_servers_nor_the_clients_has_no_action():
    assert client_action_of(ValueError("not ours")) is None


def rpc(status, code=None, details="x", **facts):
    trailers = [("pserver-error-code", code)] if code else []
    trailers += [(f"pserver-{k.replace('_', '-')}", str(v)) for k, v in facts.items()]
    return FakeRpcError(status, details, trailers)


@pytest.mark.parametrize(
    "err,stale,retryable,refused,unavailable",
    [
        (PserverError("ABORTED", "stale", code="PSERVER_STALE_EPOCH"), True, False, False, False),
        (PserverError("INVALID_ARGUMENT", "moved", code="PSERVER_WRONG_SHARD"), True, False, False, False),
        (ClientError("CLIENT_STALE_VIEW", "x"), True, False, False, False),
        (PserverError("UNAVAILABLE", "connection refused"), False, True, False, False),
        (PserverError("DEADLINE_EXCEEDED", "late"), False, True, False, False),
        (PserverError("DEADLINE_EXCEEDED", "late", code="DEADLINE_EXCEEDED"), False, True, False, False),
        (PserverError("CANCELLED", "gone"), False, True, False, False),
        (PserverError("INTERNAL", "boom"), False, True, False, False),
        (PserverError("INTERNAL", "boom", code="CHECKPOINT_CORRUPT"), False, False, False, False),
        (PserverError("RESOURCE_EXHAUSTED", "busy", code="PSERVER_OVERLOADED"), False, True, False, False),
        (PserverError("RESOURCE_EXHAUSTED", "full", code="CHECKPOINT_NO_SPACE"), False, True, False, False),
        (PserverError("RESOURCE_EXHAUSTED", "full", code="PSERVER_TABLE_FULL"), False, False, False, False),
        (PserverError("RESOURCE_EXHAUSTED", "Received message larger than max"), False, False, False, False),
        (PserverError("UNAVAILABLE", "fenced", code="PSERVER_FENCED"), False, False, False, True),
        (PserverError("UNAVAILABLE", "recovering", code="PSERVER_NOT_SERVING"), False, False, False, True),
        (PserverError("UNAVAILABLE", "stopping", code="PSERVER_SHUTTING_DOWN"), False, False, False, True),
        (PserverError("UNAUTHENTICATED", "who", code="AUTH_UNAUTHENTICATED"), False, False, True, False),
        (PserverError("PERMISSION_DENIED", "no", code="AUTH_PERMISSION_DENIED"), False, False, True, False),
        (PserverError("NOT_FOUND", "x", code="PSERVER_UNKNOWN_TENSOR"), False, False, False, False),
        (ClientError("CLIENT_MESSAGE_TOO_LARGE", "x"), False, False, False, False),
        (ValueError("not ours"), False, False, False, False),
    ],
)
def test_predicates(err, stale, retryable, refused, unavailable):
    assert (is_stale(err), is_retryable(err), is_refused(err), is_shard_unavailable(err)) == (
        stale,
        retryable,
        refused,
        unavailable,
    )


def test_grpc_own_resource_exhausted_is_a_message_too_large():
    raw = rpc(grpc.StatusCode.RESOURCE_EXHAUSTED, details="Received message larger than max (70000000 vs. 67108864)")
    err = error_of(raw)
    assert isinstance(err, ClientError) and err.code == codes.CLIENT_MESSAGE_TOO_LARGE
    assert "70000000 vs. 67108864" in str(err) and "max_message_bytes" in str(err)
    assert isinstance(err.__cause__, PserverError)
    busy = error_of(rpc(grpc.StatusCode.RESOURCE_EXHAUSTED, "PSERVER_OVERLOADED", retry_after_ms=20))
    assert isinstance(busy, PserverError) and (busy.code, busy.retry_after_ms) == ("PSERVER_OVERLOADED", 20)

    def stub_call(request, timeout):
        raise raw

    with pytest.raises(ClientError) as caught:
        call(stub_call, None, timeout=1)
    assert caught.value.code == codes.CLIENT_MESSAGE_TOO_LARGE


def test_a_reply_over_the_size_limit_fails_the_step_at_once_instead_of_retrying_it():
    client = fake_client(shards=1, step_timeout_s=30)
    try:
        client.init_params({"w": np.zeros(4, np.float32)})
        client.calls.fail = lambda method, shard, request: rpc(
            grpc.StatusCode.RESOURCE_EXHAUSTED, details="Received message larger than max"
        )
        started = time.monotonic()
        with pytest.raises(ClientError) as caught:
            client.get_params(["w"])
        assert caught.value.code == codes.CLIENT_MESSAGE_TOO_LARGE
        assert [m for m, _, _ in client.calls.sent] == ["GetParams"]
        assert time.monotonic() - started < 5
    finally:
        client.close()


def test_a_busy_shard_is_retried_after_its_hint():
    client = fake_client(shards=1)
    try:
        client.init_params({"w": np.zeros(4, np.float32)})
        client.calls.params[0]["w"] = tensor_pb2.Tensor(
            name="w", element_type=tensor_pb2.ELEMENT_TYPE_FLOAT32, content=np.ones(4, "<f4").tobytes()
        )
        busy = iter([rpc(grpc.StatusCode.RESOURCE_EXHAUSTED, "PSERVER_OVERLOADED", retry_after_ms=10)])
        client.calls.fail = lambda method, shard, request: next(busy, None)
        assert client.get_params(["w"])["w"].tolist() == [1, 1, 1, 1]
        assert len(client.calls.sent) == 2
    finally:
        client.close()
