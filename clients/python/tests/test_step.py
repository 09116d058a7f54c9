"""Client.step without servers: a step's identity and how its runs are retried and bounded."""

import time

import pytest

from pserver_client import ClientError, PserverError, connect
from pserver_client.view import ShardRoute, View


@pytest.fixture
def client():
    # Nothing listens on port 1: the view stays incomplete until the test gives one.
    c = connect(pservers=["127.0.0.1:1"], call_timeout_s=1, step_timeout_s=60)
    c._apply_view(View(1, 4, (ShardRoute(0, "127.0.0.1:1", 3, True),), revision=10))
    c.refreshes = 0

    def refresh():
        c.refreshes += 1

    c.refresh_view = refresh
    yield c
    c.close()


def stale():
    return ClientError("CLIENT_STALE_VIEW", "shard 0 changed")


def test_a_step_keeps_its_id_and_number_on_every_run_across_a_re_registration(client):
    client.trainer_id = 7
    seen = []

    def fn(ctx):
        seen.append(ctx.request_context(0))
        if len(seen) == 1:
            client.trainer_id = 99  # the session expired meanwhile: registered again
            raise stale()

    client.step(fn)
    assert len(seen) == 2
    assert seen[1] == seen[0]
    assert (seen[0].trainer_id, seen[0].step, seen[0].shard_epoch) == (7, 1, 3)

    client.step(lambda ctx: seen.append(ctx.request_context(0)))
    assert (seen[2].trainer_id, seen[2].step) == (99, 2)


def test_a_stale_run_is_followed_by_another_after_a_backoff_and_a_refresh(client):
    runs = []

    def fn(ctx):
        runs.append(time.monotonic())
        if len(runs) < 4:
            raise stale()
        return "done"

    assert client.step(fn) == "done"
    assert len(runs) == 4
    assert client.refreshes == 3


def test_step_failed_only_when_the_deadline_passes(client):
    client._step_timeout_s = 0.4
    started = time.monotonic()
    runs = []

    def fn(ctx):
        runs.append(1)
        raise stale()

    with pytest.raises(ClientError) as failure:
        client.step(fn)
    assert failure.value.code == "CLIENT_STEP_FAILED"
    assert time.monotonic() - started >= 0.39
    assert len(runs) > 1


def test_step_failed_when_no_shard_serves_before_the_deadline(client):
    client._step_timeout_s = 0.3
    client._apply_view(View(1, 4, (ShardRoute(0, "127.0.0.1:1", 3, False),), revision=11))
    runs = []
    with pytest.raises(ClientError) as failure:
        client.step(lambda ctx: runs.append(1))
    assert failure.value.code == "CLIENT_STEP_FAILED"
    assert runs == []


def test_an_error_waiting_cannot_change_is_raised_at_once(client):
    runs = []

    def fn(ctx):
        runs.append(1)
        raise PserverError("INVALID_ARGUMENT", "bad", code="PSERVER_INVALID_ARGUMENT")

    with pytest.raises(PserverError):
        client.step(fn)
    assert runs == [1]
