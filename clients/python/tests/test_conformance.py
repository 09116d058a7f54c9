"""The conformance scenarios of proto/testdata/conformance/scenarios.json, each against its own
real cluster (etcd, master, pservers) started through the local-cluster CLI."""

import os
import threading
import time

import grpc
import numpy as np
import pytest

import pserver_client
from pserver_client import ClientError, Param, PserverError, codes, optimizer_config, place_tensor
from pserver_client._proto.pserver.v1 import master_pb2, master_pb2_grpc
from pserver_client._proto.pserver.v1 import parameter_server_pb2 as ps_pb2
from pserver_client._proto.pserver.v1 import parameter_server_pb2_grpc as ps_grpc
from pserver_client._proto.pserver.v1 import context_pb2, table_pb2, tensor_pb2
from pserver_client.errors import call
from conftest import REPO_ROOT

pytestmark = pytest.mark.integration

IMPLEMENTED = {
    "placement",
    "roundTrip",
    "initElection",
    "staleEpoch",
    "duplicatePush",
    "tasks",
    "badInput",
    "defaultLearningRate",
    "attach",
    "tables",
    "finishJob",
}
#: Float tensors need a learning rate (plain SGD has no default); 1 keeps values as sent.
SGD_AS_SENT = {"sgd": {}, "learning_rate": {"base": 1}}


def element_type(name):
    return tensor_pb2.ElementType.Value(name)


def shard_stub(address):
    return ps_grpc.ParameterServerStub(grpc.insecure_channel(address))


def context(trainer_id, step, epoch, pass_=0):
    return context_pb2.RequestContext(trainer_id=trainer_id, step=step, shard_epoch=epoch, **{"pass": pass_})


def f32(values):
    return np.array(values, dtype=np.float32)


def test_every_scenario_is_run(scenarios):
    assert set(scenarios) - {"$comment", "cluster"} == IMPLEMENTED


def test_placement(scenarios, cluster):
    # The vectors (also the unit test), then where the real shards hold a split tensor's blocks.
    import json

    with open(os.path.join(REPO_ROOT, scenarios["placement"]["vectors"]), encoding="utf-8") as f:
        vectors = json.load(f)
    for case in vectors["placement"]:
        blocks = place_tensor(case["name"], case["elements"], case["block_size"], case["shards"])
        assert [b.__dict__ for b in blocks] == case["blocks"]
    with pserver_client.connect(master=cluster.masters, name="placement") as client:
        client.init_params({"spread": np.arange(40, dtype=np.float32)}, SGD_AS_SENT)
        view = client.view
        assert view.block_size == scenarios["cluster"]["blockSize"]
        expected = {s.index: set() for s in view.shards}
        for block in place_tensor("spread", 40, view.block_size, view.shard_count):
            expected[block.shard].add(block.name)
        assert all(expected.values()), "40 elements in blocks of 4 should reach every shard"
        for s in view.shards:
            status = call(shard_stub(s.address).GetShardStatus, ps_pb2.GetShardStatusRequest(), timeout=10)
            assert {t.name for t in status.tensors} == expected[s.index]
        assert np.array_equal(client.get_params(["spread"])["spread"], np.arange(40, dtype=np.float32))


def round_trip_values(t):
    et = t["elementType"]
    if et == "ELEMENT_TYPE_BFLOAT16":
        # bfloat16 is the upper half of a binary32: raw uint16 bits.
        bits = (np.array(t["values"], dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return Param(bits, element_type="BFLOAT16")
    dtype = {
        "ELEMENT_TYPE_INT32": np.int32,
        "ELEMENT_TYPE_UINT32": np.uint32,
        "ELEMENT_TYPE_INT64": np.int64,
        "ELEMENT_TYPE_UINT64": np.uint64,
        "ELEMENT_TYPE_FLOAT32": np.float32,
        "ELEMENT_TYPE_FLOAT64": np.float64,
        "ELEMENT_TYPE_FLOAT16": np.float16,
    }[et]
    return np.array([int(v) if isinstance(v, str) else v for v in t["values"]], dtype=dtype)


def test_round_trip(scenarios, cluster):
    tensors = scenarios["roundTrip"]["tensors"]
    with pserver_client.connect(master=cluster.masters, name="round-trip") as client:
        # 16-bit and integer tensors are stored, not optimized: no optimizer. Optimized ones (32-
        # and 64-bit floats) need a learning rate.
        optimized = ("ELEMENT_TYPE_FLOAT32", "ELEMENT_TYPE_FLOAT64")
        optimizers = {t["name"]: SGD_AS_SENT if t["elementType"] in optimized else None for t in tensors}
        client.init_params({t["name"]: round_trip_values(t) for t in tensors}, optimizers)
        got = client.get_params([t["name"] for t in tensors])
        shards = set()
        for t in tensors:
            array = got[t["name"]]
            assert array.astype(array.dtype.newbyteorder("<")).tobytes().hex() == t["contentHex"], t["name"]
            blocks = place_tensor(t["name"], len(t["values"]), client.view.block_size, client.view.shard_count)
            assert len(blocks) == 2  # 5 elements in blocks of 4
            shards.update(b.shard for b in blocks)
        assert shards == set(range(client.view.shard_count))


def test_init_election(scenarios, cluster):
    spec = scenarios["initElection"]
    name, length = spec["tensor"]["name"], spec["tensor"]["length"]
    results, errors, ids = {}, [], {}

    def trainer(k):
        try:
            with pserver_client.connect(master=cluster.masters, name=f"elect-{k}") as client:
                ids[k] = client.trainer_id
                client.init_params({name: np.full(length, k + 1, dtype=np.float32)}, SGD_AS_SENT)
                results[k] = client.get_params([name])[name]
        except Exception as err:  # reported below, with the trainer's number
            errors.append((k, err))

    threads = [threading.Thread(target=trainer, args=(k,)) for k in range(spec["trainers"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert len(set(ids.values())) == spec["trainers"]
    first = results[0]
    assert all(np.array_equal(r, first) for r in results.values())
    assert first[0] in [k + 1 for k in range(spec["trainers"])]
    assert np.array_equal(first, np.full(length, first[0], dtype=np.float32))


def test_stale_epoch(scenarios, cluster):
    spec = scenarios["staleEpoch"]
    name = spec["tensor"]["name"]
    grad = f32(spec["gradient"])
    with pserver_client.connect(master=cluster.masters, name="stale-epoch") as client:
        client.init_params({name: np.zeros(spec["tensor"]["length"], np.float32)}, spec["optimizer"])
        client.step(lambda ctx: ctx.send_grads({name: grad}))
        shard = place_tensor(name, len(grad), client.view.block_size, client.view.shard_count)[0].shard
        address = client.view.shards[shard].address
        call(shard_stub(address).SaveCheckpoint, ps_pb2.SaveCheckpointRequest(), timeout=30)
        client.step(lambda ctx: ctx.send_grads({name: grad}))

        runs, pulled, steps = [], [], []

        def step3(ctx):
            runs.append(ctx.view.shards[shard].epoch)
            steps.append(ctx.step)
            pulled.append(ctx.get_params([name])[name].tolist())
            if len(runs) == 1:
                answer = cluster.command(f"kill-serving {shard}")
                assert answer["serving"][str(shard)]["epoch"] > runs[0]
            ctx.send_grads({name: grad})

        client.step(step3)
        expect = spec["expect"]
        assert len(runs) == expect["runsOfStep3"]
        assert steps[0] == steps[1]  # the re-run keeps its step number
        assert runs[1] > runs[0]
        assert pulled == [expect["pulledInRun1"], expect["pulledInRun2"]]
        assert client.get_params([name])[name].tolist() == expect["final"]


def test_duplicate_push(scenarios, cluster):
    spec = scenarios["duplicatePush"]
    name = spec["tensor"]["name"]
    with pserver_client.connect(master=cluster.masters, name="duplicate") as client:
        client.init_params({name: np.zeros(spec["tensor"]["length"], np.float32)}, spec["optimizer"])
        view = client.view
        shard = place_tensor(name, spec["tensor"]["length"], view.block_size, view.shard_count)[0].shard
        route = view.shards[shard]
        request = ps_pb2.SendGradsRequest(
            context=context(client.trainer_id, 100, route.epoch),
            grads=[
                tensor_pb2.Tensor(
                    name=name,
                    element_type=element_type("ELEMENT_TYPE_FLOAT32"),
                    content=f32(spec["gradient"]).astype("<f4").tobytes(),
                )
            ],
        )
        stub = shard_stub(route.address)
        outcomes = [ps_pb2.PushOutcome.Name(call(stub.SendGrads, request, timeout=10).outcome) for _ in range(2)]
        assert outcomes == spec["expect"]["outcomes"]
        assert client.get_params([name])[name].tolist() == spec["expect"]["final"]


def test_tasks(scenarios, cluster):
    spec = scenarios["tasks"]
    Outcome = master_pb2.GetTaskOutcome
    with pserver_client.connect(master=cluster.masters, name="tasks-a") as a, pserver_client.connect(
        master=cluster.masters, name="tasks-b"
    ) as b:
        reply = a.set_dataset(spec["dataset"])
        assert reply.tasks == spec["dataset"]["records"]["records"] // spec["dataset"]["records"]["taskRecords"]
        # Only one master: the raw stub talks to the leader.
        stub = master_pb2_grpc.MasterStub(grpc.insecure_channel(cluster.masters[0]))

        def get_task(pass_):
            req = master_pb2.GetTaskRequest(context=context(a.trainer_id, 0, 0, pass_))
            return call(stub.GetTask, req, timeout=10)

        held = []
        for item in spec["sequence"]:
            if "take" in item:
                replies = [get_task(item["pass"]) for _ in range(item["take"])]
                assert [r.outcome for r in replies] == [Outcome.GET_TASK_OUTCOME_TASK] * item["take"]
                assert sorted(r.task.id for r in replies) == list(range(item["take"]))
                held = [r.task for r in replies]
            elif item.get("finishAll"):
                for task in held:
                    finished = master_pb2.TaskFinishedRequest(
                        context=context(a.trainer_id, 0, 0, getattr(task, "pass")),
                        task_id=task.id,
                        dispatch=task.dispatch,
                        records=1,
                    )
                    call(stub.TaskFinished, finished, timeout=10)
                held = []
            else:
                reply = get_task(item["getTask"]["pass"])
                assert Outcome.Name(reply.outcome) == item["outcome"], item
                if reply.outcome == Outcome.GET_TASK_OUTCOME_TASK:
                    held = [reply.task]
        # The task of pass 1 taken raw goes back to the queue; the client's loop gets all four.
        for task in held:
            failed = master_pb2.TaskFailedRequest(
                context=context(a.trainer_id, 0, 0, getattr(task, "pass")),
                task_id=task.id,
                dispatch=task.dispatch,
                reason="handed back by the conformance runner",
            )
            call(stub.TaskFailed, failed, timeout=10)

        # Pass 1, one trainer: a body that raises reports its task failed; the task comes back.
        seen, raised = [], None
        try:
            for task in a.tasks(1):
                raised = task.id
                raise RuntimeError("the trainer's body failed")
        except RuntimeError:
            pass
        for task in a.tasks(1):
            assert task.pass_ == 1 and task.records.end - task.records.start == 1
            seen.append(task.id)
        assert sorted(seen) == [0, 1, 2, 3] and raised in seen

        # Pass 2, two trainers at once: each task once across them, then both loops end.
        got = {"a": [], "b": []}
        errors = []

        def loop(client, key):
            try:
                for task in client.tasks(2):
                    got[key].append(task.id)
            except Exception as err:  # reported below
                errors.append(err)

        threads = [threading.Thread(target=loop, args=(c, k)) for c, k in ((a, "a"), (b, "b"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == [] and not any(t.is_alive() for t in threads)
        assert sorted(got["a"] + got["b"]) == [0, 1, 2, 3]
        assert Outcome.Name(get_task(2).outcome) == "GET_TASK_OUTCOME_PASS_OVER"

        # Pass 3: a GetTask sent again with the same request id (as after a lost reply) gets the
        # task it took, same dispatch; another id takes another task.
        def get_task_as(request_id):
            req = master_pb2.GetTaskRequest(context=context(a.trainer_id, 0, 0, 3), request_id=request_id)
            reply = call(stub.GetTask, req, timeout=10)
            assert reply.outcome == Outcome.GET_TASK_OUTCOME_TASK
            return reply.task

        first, again, other = get_task_as("retry-1"), get_task_as("retry-1"), get_task_as("retry-2")
        assert (again.id, again.dispatch) == (first.id, first.dispatch)
        assert other.id != first.id


def test_bad_input(scenarios, cluster):
    spec = scenarios["badInput"]
    setup = spec["setup"]
    name, shape = setup["tensor"]["name"], tuple(setup["tensor"]["shape"])
    with pserver_client.connect(master=cluster.masters, name="bad-input") as client:
        view = client.step(lambda ctx: ctx.view)  # once every shard serves

        def refused(case, step):
            with pytest.raises(PserverError) as caught:
                if case["rpc"] == "SetDataset":
                    client.set_dataset(case["request"])
                    return
                shard = place_tensor(case["to"], 1, view.block_size, view.shard_count)[0].shard
                route = view.shards[shard]
                stub = shard_stub(route.address)
                ctx = context(client.trainer_id, step, route.epoch)
                if case["rpc"] == "SendGrads":
                    grad = wire_tensor(case["grad"])
                    call(stub.SendGrads, ps_pb2.SendGradsRequest(context=ctx, grads=[grad]), timeout=10)
                elif case["rpc"] == "InitParam":
                    request = ps_pb2.InitParamRequest(
                        context=ctx, param=wire_tensor(case["param"]), optimizer=optimizer_config(case["optimizer"])
                    )
                    call(stub.InitParam, request, timeout=10)
                elif case["rpc"] == "GetParams":
                    call(stub.GetParams, ps_pb2.GetParamsRequest(context=ctx, names=case["names"]), timeout=10)
                else:
                    raise AssertionError(f"unknown rpc {case['rpc']}")
            assert (caught.value.status, caught.value.code) == (case["code"], case["errorCode"]), case["name"]

        # InitParam cases go before the model's init, where the pserver refuses bad input as
        # after it: the cases hold whichever state the shards are in.
        cases = list(enumerate(spec["cases"], start=100))
        for step, case in cases:
            if case["rpc"] == "InitParam":
                refused(case, step)
        client.init_params({name: f32(setup["values"]).reshape(shape)}, setup["optimizer"])
        for step, case in cases:
            if case["rpc"] != "InitParam":
                refused(case, step)
        got = client.get_params([name])[name]
        assert got.shape == shape and got.reshape(-1).tolist() == setup["values"]
        assert "no-rate" not in client.list_params()
        # The client's own API surfaces typed errors, and checks a shape before sending.
        with pytest.raises(ClientError) as caught:
            client.get_params(["never-declared"])
        assert caught.value.code == codes.CLIENT_UNKNOWN_TENSOR
        with pytest.raises(ClientError) as caught:
            client.step(lambda ctx: ctx.send_grads({name: np.ones((4, 1), np.float32)}))
        assert (caught.value.code, caught.value.expected, caught.value.actual) == (codes.CLIENT_SHAPE_MISMATCH, shape, (4, 1))
        assert client.get_params([name])[name].reshape(-1).tolist() == setup["values"]


def wire_tensor(t):
    """A Tensor of the scenarios' form: name, elementType, contentHex and maybe shape."""
    return tensor_pb2.Tensor(
        name=t["name"],
        element_type=element_type(t["elementType"]),
        shape=t.get("shape", []),
        content=bytes.fromhex(t["contentHex"]),
    )


def test_default_learning_rate(scenarios, cluster):
    spec = scenarios["defaultLearningRate"]
    tensor, expect = spec["tensor"], spec["expect"]
    name, shape = tensor["name"], tuple(tensor["shape"])
    with pserver_client.connect(master=cluster.masters, name="default-lr") as client:
        client.init_params({name: f32(spec["values"]).reshape(shape)}, spec["optimizer"])
        client.step(lambda ctx: ctx.send_grads({name: f32(spec["gradient"]).reshape(shape)}))
        after = client.get_params([name])[name]
        np.testing.assert_allclose(after, np.full(shape, expect["after"]), atol=expect["tolerance"], rtol=0)
        listed = client.list_params()[name]
        assert listed.optimizer["learning_rate"]["base"] == pytest.approx(expect["listedLearningRate"])
        assert "adam" in listed.optimizer


def test_attach(scenarios, cluster):
    spec = scenarios["attach"]
    dtypes = {"ELEMENT_TYPE_FLOAT32": np.float32, "ELEMENT_TYPE_FLOAT64": np.float64}
    model = {
        t["name"]: np.array(t["values"], dtype=dtypes[t["elementType"]]).reshape(t["shape"]) for t in spec["tensors"]
    }
    with pserver_client.connect(master=cluster.masters, name="attach-initializer") as trainer:
        trainer.init_params(model, spec["optimizer"])
        assert any(v.size > trainer.view.block_size for v in model.values())  # split in blocks
        # A reader that never initializes: it lists the model, then reads it.
        with pserver_client.connect(master=cluster.masters, name="attach-reader") as reader:
            listed = reader.list_params()
            assert {
                n: {"elementType": p.element_type, "shape": list(p.shape), "learningRate": p.optimizer["learning_rate"]["base"]}
                for n, p in listed.items()
                if n in model
            } == spec["expect"]["listed"]
            assert {n: p.length for n, p in listed.items() if n in model} == {n: v.size for n, v in model.items()}
            got = reader.get_params(list(model))
        # Another reads by name straight away: get_params lists the model first.
        with pserver_client.connect(master=cluster.masters, name="attach-by-name") as by_name:
            again = by_name.get_params(list(model))
    for n, values in model.items():
        for read in (got, again):
            assert read[n].dtype == values.dtype and read[n].shape == values.shape
            assert np.array_equal(read[n], values), n


def test_tables(scenarios, cluster):
    spec = scenarios["tables"]
    tables, probe, push, gated_push, expect = spec["tables"], spec["probe"], spec["push"], spec["gatedPush"], spec["expect"]

    def ids(values):
        return np.array([int(v) for v in values], dtype=np.int64)

    def rows(grads):
        return f32(grads)

    def hex_of(values):
        return values.astype("<f4").tobytes().hex()

    with pserver_client.connect(master=cluster.masters, name="tables") as client:
        client.init_params({}, tables=tables)  # the scenario's specs are in proto JSON's camelCase
        emb, gated = tables[0]["name"], tables[1]["name"]
        assert {n: (t.dim, t.buckets) for n, t in client.tables().items()} == {
            t["name"]: (t["dim"], t["buckets"]) for t in tables
        }

        def step1(ctx):
            read = ctx.lookup(emb, ids(probe))
            ctx.push_rows(push["table"], ids(push["ids"]), rows(push["grads"]))
            return read

        first = client.step(step1)
        assert first.shape == (len(probe), tables[0]["dim"]) and first.dtype == np.float32
        assert hex_of(first) == expect["initHex"]
        assert hex_of(client.step(lambda ctx: ctx.lookup(emb, ids(probe)))) == expect["afterHex"]
        for after in expect["gatedAfter"]:
            client.step(lambda ctx: ctx.push_rows(gated_push["table"], ids(gated_push["ids"]), rows(gated_push["grads"])))
            read = client.step(lambda ctx: ctx.lookup(gated, ids(gated_push["ids"])))
            assert read.reshape(-1).tolist() == after

        buckets = tables[0]["buckets"]
        view = client.view
        shard = pserver_client.table_shards(emb, buckets, view.shard_count)[pserver_client.bucket_of_id(5, buckets)]
        stub = shard_stub(view.shards[shard].address)
        epoch = call(stub.GetShardStatus, ps_pb2.GetShardStatusRequest(), timeout=10).shard_epoch
        for bad in spec["badPushes"]:
            sparse = bad["sparse"]
            request = ps_pb2.SendGradsRequest(
                context=context(client.trainer_id, 1000, epoch),
                sparse=[
                    table_pb2.SparseGrad(
                        table=sparse["table"], ids=bytes.fromhex(sparse["idsHex"]), grads=bytes.fromhex(sparse["gradsHex"])
                    )
                ],
            )
            with pytest.raises(PserverError) as caught:
                call(stub.SendGrads, request, timeout=10)
            assert (caught.value.status, caught.value.code) == (bad["code"], bad["errorCode"]), bad["name"]
        # Refused whole: nothing changed. An attached reader learns the table from ListParams.
        assert hex_of(client.step(lambda ctx: ctx.lookup(emb, ids(probe)))) == expect["afterHex"]
        with pserver_client.connect(master=cluster.masters, name="tables-reader") as reader:
            assert hex_of(reader.lookup(emb, [int(v) for v in probe])) == expect["afterHex"]


def test_finish_job(scenarios, cluster):
    spec = scenarios["finishJob"]
    answers = []
    for name in spec["trainers"]:
        with pserver_client.connect(master=cluster.masters, name=name) as client:
            answers.append(client.finish_job(trainers=spec["quorum"]))
    assert answers == [False] * (len(spec["trainers"]) - 1) + [True]
    deadline = time.monotonic() + spec["leaveWithinMs"] / 1000
    while cluster.command("serving")["serving"]:
        assert time.monotonic() < deadline, "the pservers of the finished job did not leave"
        time.sleep(0.1)
