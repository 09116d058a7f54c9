#!/usr/bin/env python3
"""Load driver of the data-plane benchmark: the same traffic, over the same contract
(pserver.v1.ParameterServer), against any server that speaks it; one JSON line on stdout.

Untimed setup: 16 float32 tensors w/0 … w/15 of 4 MiB (1,048,576 elements: each is stored whole,
under its own name, by the placement rule) and a 1 KiB tensor `small`, all plain SGD at --lr;
then FinishInitParams. The target must serve shard 0 of 1 (GetShardStatus), where every name is
placed; its shard_epoch goes into every request.

Timed phases, --seconds each, on one HTTP/2 channel; no call starts after the deadline and the
clock stops when the last one in flight completes:
  push    SendGrads of one 4 MiB block per call, sweeping the blocks, --concurrency in flight
  stream  the same pushes as SendGradsStream in --chunk-kb pieces
  pull    GetParams of one block per call, --concurrency in flight (at least one full sweep)
  small   SendGrads of --small-bytes to `small`, --small-concurrency in flight
Every push borrows a trainer id from a pool (one id per call in flight, as a trainer keeps one
push in flight per shard) and the next step of that id, so every push must be answered
PUSH_OUTCOME_APPLIED with that step, or the run fails. Gradient requests are serialized once per
block; a call prepends only its RequestContext (protobuf merges concatenated messages).

Untimed check: the values pulled last must equal init - lr*k*g for the k pushes each block
received, and `small` -lr*n after n small pushes; exit 1 if not.

CPU: the server's from /proc/<--server-pid>/stat, the driver's from getrusage, the whole
machine's from /proc/stat, before and after each phase, reported as cores (CPU seconds / wall
seconds); `other_cores` is the machine's less the server's and the driver's (others' load).

Run with Debian's python3 (python3-grpcio, python3-numpy):
    python3 driver.py --target 127.0.0.1:50061 --server-pid PID --seconds 10
"""

import argparse
import asyncio
import json
import os
import resource
import sys
import time

import grpc
import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ next to the client's stubs
# The stubs the Python client is generated with (clients/python/pserver_client/_proto).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../clients/python"))
from pserver_client._proto.pserver.v1 import context_pb2  # noqa: E402
from pserver_client._proto.pserver.v1 import optimizer_pb2  # noqa: E402
from pserver_client._proto.pserver.v1 import parameter_server_pb2 as ps_pb2  # noqa: E402
from pserver_client._proto.pserver.v1 import parameter_server_pb2_grpc as ps_grpc  # noqa: E402
from pserver_client._proto.pserver.v1 import tensor_pb2  # noqa: E402

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
BLOCK_ELEMENTS = 1_048_576  # the default block size: a tensor of at most this many is one block
F32 = np.dtype("<f4")
FLOAT32 = tensor_pb2.ELEMENT_TYPE_FLOAT32
APPLIED = ps_pb2.PUSH_OUTCOME_APPLIED
SERVICE = "/pserver.v1.ParameterServer/"


class PushFailed(Exception):
    pass


class Trainers:
    """Trainer ids for pushes: a call borrows an idle id and its next step, and gives it back when
    answered, so each id has at most one push in flight and its steps only grow."""

    def __init__(self):
        self.idle = []
        self.steps = {}
        self.next_id = (os.getpid() << 16) + 1  # chosen by the client, as standalone trainers do; < 2^53

    def borrow(self):
        tid = self.idle.pop() if self.idle else None
        if tid is None:
            tid, self.next_id = self.next_id, self.next_id + 1
            self.steps[tid] = 0
        self.steps[tid] += 1
        return tid, self.steps[tid]

    def give_back(self, tid):
        self.idle.append(tid)


class Target:
    """The calls the driver makes, on one channel."""

    def __init__(self, channel, lr):
        self.stub = ps_grpc.ParameterServerStub(channel)
        # Pushes take requests serialized ahead (bytes), see `context_prefix`.
        self.send_grads = channel.unary_unary(
            SERVICE + "SendGrads", request_serializer=None, response_deserializer=ps_pb2.SendGradsResponse.FromString
        )
        self.send_grads_stream = channel.stream_unary(
            SERVICE + "SendGradsStream",
            request_serializer=None,
            response_deserializer=ps_pb2.SendGradsResponse.FromString,
        )
        self.optimizer = optimizer_pb2.OptimizerConfig(
            sgd=optimizer_pb2.Sgd(),
            learning_rate=optimizer_pb2.LearningRate(base=lr, constant=optimizer_pb2.ConstantLr()),
        )
        self.epoch = 0
        self.trainers = Trainers()

    def context(self, trainer_id=0, step=0):
        return context_pb2.RequestContext(trainer_id=trainer_id, step=step, shard_epoch=self.epoch)

    async def open_shard(self):
        st = await self.stub.GetShardStatus(ps_pb2.GetShardStatusRequest())
        if (st.index, st.shard_count) != (0, 1):
            raise SystemExit("the target serves shard %d of %d, not 0 of 1" % (st.index, st.shard_count))
        if st.initialized:
            raise SystemExit("the target's shard is already initialized (a stale checkpoint directory?)")
        self.epoch = st.shard_epoch

    async def init(self, name, values):
        if values.size > BLOCK_ELEMENTS:
            raise ValueError("%s: %d elements would be split into blocks" % (name, values.size))
        await self.stub.InitParam(
            ps_pb2.InitParamRequest(
                context=self.context(),
                param=tensor_pb2.Tensor(name=name, element_type=FLOAT32, shape=[values.size], content=values.tobytes()),
                optimizer=self.optimizer,
            )
        )

    async def push(self, unary_tail, stream_pieces=None):
        """One push: `unary_tail` is a serialized SendGradsRequest without its context;
        `stream_pieces`, when given, serialized SendGradsChunks without context, sent instead."""
        tid, step = self.trainers.borrow()
        try:
            ctx = self.context(tid, step)
            if stream_pieces is None:
                reply = await self.send_grads(ps_pb2.SendGradsRequest(context=ctx).SerializeToString() + unary_tail)
            else:
                first = ps_pb2.SendGradsChunk(context=ctx).SerializeToString() + stream_pieces[0]
                reply = await self.send_grads_stream(iter([first, *stream_pieces[1:]]))
        finally:
            self.trainers.give_back(tid)
        if reply.outcome != APPLIED or reply.last_applied_step != step:
            raise PushFailed(
                "trainer %d step %d answered %s, last applied step %d"
                % (tid, step, ps_pb2.PushOutcome.Name(reply.outcome), reply.last_applied_step)
            )

    async def pull(self, name):
        reply = await self.stub.GetParams(ps_pb2.GetParamsRequest(context=self.context(), names=[name]))
        if [p.name for p in reply.params] != [name]:
            raise RuntimeError("GetParams(%s) answered %s" % (name, [p.name for p in reply.params]))
        return reply.params[0].content


def unary_tail(name, grad):
    return ps_pb2.SendGradsRequest(
        grads=[tensor_pb2.Tensor(name=name, element_type=FLOAT32, shape=[len(grad) // 4], content=grad)]
    ).SerializeToString()


def stream_pieces(name, grad, chunk_bytes):
    return [
        ps_pb2.SendGradsChunk(
            grads=[
                ps_pb2.GradientChunk(
                    name=name,
                    element_type=FLOAT32,
                    offset=offset,
                    content=grad[offset : offset + chunk_bytes],
                    shape=[len(grad) // 4] if offset == 0 else [],
                )
            ]
        ).SerializeToString()
        for offset in range(0, len(grad), chunk_bytes)
    ]


def driver_cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def server_cpu(pid):
    """CPU seconds process `pid` used so far, all its threads (utime + stime), or None."""
    if not pid:
        return None
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


async def run_phase(seconds, depth, items, call, min_sweeps=0):
    """Sweeps over `items` with `depth` calls in flight until `seconds` have passed (and at least
    `min_sweeps` sweeps were issued). `call(item)` awaits one RPC and returns the payload bytes it
    moved. Returns (calls, bytes, wall seconds)."""
    t0 = time.perf_counter()
    deadline = t0 + seconds
    totals = {"calls": 0, "bytes": 0, "last": t0}

    def schedule():
        sweeps = 0
        while True:
            for item in items:
                if sweeps >= min_sweeps and time.perf_counter() >= deadline:
                    return
                yield item
            sweeps += 1

    todo = schedule()  # shared by the workers; next() never awaits

    async def worker():
        for item in todo:
            moved = await call(item)
            totals["calls"] += 1
            totals["bytes"] += moved
            totals["last"] = time.perf_counter()

    await asyncio.gather(*(worker() for _ in range(depth)))
    return totals["calls"], totals["bytes"], totals["last"] - t0


def machine_cpu():
    """CPU seconds the whole machine was busy so far (/proc/stat: all but idle and iowait), or None."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
        return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


async def measure(name, server_pid, phase):
    c0, s0, m0 = driver_cpu(), server_cpu(server_pid), machine_cpu()
    calls, moved, wall = await phase
    c1, s1, m1 = driver_cpu(), server_cpu(server_pid), machine_cpu()
    figures = {
        "calls": calls,
        "bytes": moved,
        "seconds": wall,
        "gbps": moved / wall / 1e9,
        "calls_per_s": calls / wall,
        "driver_cores": (c1 - c0) / wall,
    }
    if s0 is not None and s1 is not None:
        figures.update(server_cpu_s=s1 - s0, server_cores=(s1 - s0) / wall)
        if m0 is not None and m1 is not None:
            # Everything else the machine did meanwhile (other processes, interrupts): noise.
            figures["other_cores"] = (m1 - m0 - (s1 - s0) - (c1 - c0)) / wall
    print(
        "%-6s %7d calls %8.3f GB in %5.2f s: %6.3f GB/s %8.0f calls/s; cores: server %.2f, driver %.2f, others %.2f"
        % (
            name,
            calls,
            moved / 1e9,
            wall,
            figures["gbps"],
            calls / wall,
            figures.get("server_cores", float("nan")),
            figures["driver_cores"],
            figures.get("other_cores", float("nan")),
        ),
        file=sys.stderr,
        flush=True,
    )
    return figures


def open_channel(args):
    options = [
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ]
    if not args.tls_ca:
        return grpc.aio.insecure_channel(args.target, options=options)

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    creds = grpc.ssl_channel_credentials(
        root_certificates=read(args.tls_ca),
        private_key=read(args.tls_key) if args.tls_key else None,
        certificate_chain=read(args.tls_cert) if args.tls_cert else None,
    )
    return grpc.aio.secure_channel(args.target, creds, options=options)


async def drive(args):
    block_elements = int(args.block_mb * 1024 * 1024) // 4
    names = ["w/%d" % i for i in range(args.blocks)]
    rng = np.random.default_rng(12345)
    init = {name: rng.standard_normal(block_elements, dtype=np.float32) for name in names}
    grads = {name: rng.uniform(-1.0, 1.0, block_elements).astype(F32) for name in names}
    small_elements = args.small_bytes // 4

    channel = open_channel(args)
    await asyncio.wait_for(channel.channel_ready(), 30)
    target = Target(channel, args.lr)
    await target.open_shard()
    for name in names:
        await target.init(name, init[name])
    await target.init("small", np.zeros(small_elements, dtype=F32))
    await target.stub.FinishInitParams(ps_pb2.FinishInitParamsRequest(context=target.context()))

    tails = {name: unary_tail(name, grads[name].tobytes()) for name in names}
    pieces = {name: stream_pieces(name, grads[name].tobytes(), args.chunk_kb * 1024) for name in names}
    block_bytes = block_elements * 4
    pushes = {name: 0 for name in names}

    async def push_one(name):
        await target.push(tails[name])
        pushes[name] += 1
        return block_bytes

    async def stream_one(name):
        await target.push(tails[name], pieces[name])
        pushes[name] += 1
        return block_bytes

    last = {}

    async def pull_one(name):
        last[name] = await target.pull(name)
        return len(last[name])

    small_tail = unary_tail("small", np.ones(small_elements, dtype=F32).tobytes())

    async def small_one(_):
        await target.push(small_tail)
        return args.small_bytes

    seconds, depth = args.seconds, args.concurrency
    runs = {
        "push": lambda: run_phase(seconds, depth, names, push_one),
        "stream": lambda: run_phase(seconds, depth, names, stream_one),
        "pull": lambda: run_phase(seconds, depth, names, pull_one, min_sweeps=1),
        "small": lambda: run_phase(seconds, args.small_concurrency, ["small"], small_one),
    }
    phases = {}
    for phase in args.phases.split(","):
        phases[phase] = await measure(phase, args.server_pid, runs[phase]())
    if "pull" not in phases:  # the check reads every block once more, untimed
        for name in names:
            await pull_one(name)

    # The check: the last pull of each block came after all of its pushes.
    worst, lr = 0.0, np.float64(args.lr)
    for name in names:
        got = np.frombuffer(last[name], dtype=F32).astype(np.float64)
        want = init[name].astype(np.float64) - lr * pushes[name] * grads[name].astype(np.float64)
        err = float(np.max(np.abs(got - want))) if got.size == want.size else float("inf")
        # float32 rounding of k in-place steps stays below this; a lost push shows up to lr*|g|.
        worst = max(worst, err / (2e-6 * (1 + pushes[name])))
    blocks_ok = worst <= 1.0
    small_calls = phases["small"]["calls"] if "small" in phases else 0
    got = np.frombuffer(await target.pull("small"), dtype=F32)
    small_ok = got.size == small_elements and bool(np.allclose(got, -args.lr * small_calls, rtol=1e-2, atol=1e-3))
    await channel.close()

    check = {
        "ok": blocks_ok and small_ok,
        "blocks_ok": blocks_ok,
        "small_ok": small_ok,
        "worst_error_of_bound": worst,
        "pushes_per_block": [min(pushes.values()), max(pushes.values())],
    }
    print(
        "check  blocks %s (worst error %.2g of its bound, %d-%d pushes a block), small %s"
        % ("ok" if blocks_ok else "WRONG", worst, *check["pushes_per_block"], "ok" if small_ok else "WRONG"),
        file=sys.stderr,
        flush=True,
    )
    return {
        "target": args.target,
        "tls": bool(args.tls_ca),
        "shard_epoch": target.epoch,
        "blocks": args.blocks,
        "block_bytes": block_bytes,
        "concurrency": depth,
        "chunk_bytes": args.chunk_kb * 1024,
        "small_bytes": args.small_bytes,
        "small_concurrency": args.small_concurrency,
        "seconds": seconds,
        "lr": args.lr,
        "phases": phases,
        "check": check,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True, help="host:port")
    ap.add_argument("--server-pid", type=int, default=0, help="the server's pid (same host), for its CPU time")
    ap.add_argument("--seconds", type=float, default=10.0, help="duration of each timed phase")
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--block-mb", type=float, default=4.0, help="MiB per block, at most 4")
    ap.add_argument("--concurrency", type=int, default=4, help="calls in flight: push, stream, pull")
    ap.add_argument("--chunk-kb", type=int, default=256, help="KiB per SendGradsStream piece")
    ap.add_argument("--small-bytes", type=int, default=1024)
    ap.add_argument("--small-concurrency", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument(
        "--phases",
        default="push,stream,pull,small",
        type=lambda v: v if v and set(v.split(",")) <= {"push", "stream", "pull", "small"} else sys.exit(
            "driver: --phases: a comma-separated subset of push,stream,pull,small, got %r" % v
        ),
        help="the timed phases to run, in order (default: all)",
    )
    ap.add_argument("--tls-ca", help="mutual TLS: the CA of the server's certificate (PEM)")
    ap.add_argument("--tls-cert", help="mutual TLS: the client certificate (PEM)")
    ap.add_argument("--tls-key", help="mutual TLS: the client certificate's key (PEM)")
    args = ap.parse_args()
    try:
        out = asyncio.run(drive(args))
    except (grpc.aio.AioRpcError, PushFailed) as err:
        detail = "%s: %s" % (err.code().name, err.details()) if isinstance(err, grpc.aio.AioRpcError) else str(err)
        sys.exit("driver: %s failed: %s" % (args.target, detail))
    print(json.dumps(out), flush=True)
    sys.exit(0 if out["check"]["ok"] else 1)


if __name__ == "__main__":
    main()
