#!/usr/bin/python3
"""A demo trainer in Python: digits through a small MLP, the weights on the pservers, the data
handed out as tasks by the master. It uses only `pserver_client`, takes the same flags and prints
the same JSON event lines as apps/demo/src/trainer.ts, so it can join a TypeScript demo job: it
proposes the same initial weights (the same seeded generator) and the same dataset.

    /usr/bin/python3 examples/python/digits_trainer.py --master 127.0.0.1:8200 --data '/tmp/x/data/train-*.csv'
"""

import argparse
import json
import math
import os
import sys
import threading
import time

import numpy as np

try:
    import pserver_client
except ImportError:  # run from the repository: the package lives in clients/python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    import pserver_client

INPUTS = 784
CLASSES = 10
PARAM_NAMES = ["w1", "b1", "w2", "b2"]
MASK32 = 0xFFFFFFFF


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Trains the digits MLP on the tasks of a pserver job.")
    parser.add_argument("--master", required=True, type=lambda v: v.split(","), help="master replicas, comma-separated")
    parser.add_argument("--data", required=True, help="the training files (CSV: label, 784 pixels)")
    parser.add_argument("--name", default=f"trainer-{os.getpid()}", help="this trainer's name")
    parser.add_argument("--passes", type=positive, default=3, help="passes over the data")
    parser.add_argument("--batch", type=positive, default=32, help="samples per step")
    parser.add_argument("--task-bytes", type=positive, default=128 * 1024, help="bytes of data per task")
    parser.add_argument("--task-timeout-ms", type=positive, help="how long a task may be held (default: the master's)")
    parser.add_argument("--hidden", type=positive, default=64, help="hidden units")
    parser.add_argument("--seed", type=positive, default=1, help="seed of the initial weights")
    parser.add_argument("--learning-rate", type=float, default=0.004, help="Adam learning rate")
    parser.add_argument("--exit-on-stdin-close", action="store_true", help="exit when standard input closes")
    parser.add_argument("--tls-ca", help="connect with TLS; the CA of the servers' certificates (PEM)")
    parser.add_argument("--tls-cert", help="client certificate for mutual TLS (PEM)")
    parser.add_argument("--tls-key", help="its private key (PEM)")
    parser.add_argument("--tls-server-name", help="the name in the servers' certificates, if not the host")
    parser.add_argument("--token-file", help="send the bearer token in this file (needs TLS)")
    return parser.parse_args(argv)


def report(event, **fields):
    line = {"event": event, "t": int(time.time() * 1000), **fields}
    print(json.dumps(line, separators=(",", ":")), flush=True)


def seeded_random(seed):
    """mulberry32, bit for bit as apps/demo/src/model/random.ts, so that every trainer (in either
    language) proposes the same initial weights."""
    state = seed & MASK32

    def imul(a, b):
        return (a * b) & MASK32

    def uniform():
        nonlocal state
        state = (state + 0x6D2B79F5) & MASK32
        t = state
        t = imul(t ^ (t >> 15), t | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & MASK32
        return ((t ^ (t >> 14)) & MASK32) / 4294967296

    return uniform


def initial_params(hidden, seed):
    """He-initialized weights (seeded) and zero biases; w1 is inputs × hidden, row-major."""
    uniform = seeded_random(seed)

    def scaled(n, std):
        out = np.empty(n, dtype=np.float32)
        for i in range(n):
            radius = math.sqrt(-2 * math.log(1 - uniform()))
            out[i] = radius * math.cos(2 * math.pi * uniform()) * std
        return out

    return {
        "w1": scaled(INPUTS * hidden, math.sqrt(2 / INPUTS)),
        "b1": np.zeros(hidden, dtype=np.float32),
        "w2": scaled(hidden * CLASSES, math.sqrt(1 / hidden)),
        "b2": np.zeros(CLASSES, dtype=np.float32),
    }


def from_csv_line(line):
    fields = line.split(",")
    if len(fields) != INPUTS + 1:
        raise ValueError(f"a digit line has {INPUTS + 1} fields, this one {len(fields)}")
    label = int(fields[0])
    if not 0 <= label <= 9:
        raise ValueError(f"a digit's label is 0-9, not '{fields[0]}'")
    return np.array(fields[1:], dtype=np.float64) / 255, label


def gradients(params, pixels, labels):
    """The mean softmax cross-entropy of a batch and its gradients (ReLU hidden layer)."""
    hidden = params["b1"].size
    w1 = params["w1"].reshape(INPUTS, hidden).astype(np.float64)
    w2 = params["w2"].reshape(hidden, CLASSES).astype(np.float64)
    n = len(labels)
    h = np.maximum(pixels @ w1 + params["b1"], 0)
    z = h @ w2 + params["b2"]
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    loss = float(-np.log(np.maximum(p[rows, labels], 1e-12)).mean())
    dz = p
    dz[rows, labels] -= 1
    dz /= n
    dh = (dz @ w2.T) * (h > 0)
    grads = {
        "w1": (pixels.T @ dh).reshape(-1),
        "b1": dh.sum(axis=0),
        "w2": (h.T @ dz).reshape(-1),
        "b2": dz.sum(axis=0),
    }
    return loss, {k: v.astype(np.float32) for k, v in grads.items()}


def main(options):
    if options.exit_on_stdin_close:
        # The demo holds the other end: when it dies, even by SIGKILL, this trainer goes too.
        def watch_stdin():
            # os.read on the raw descriptor: a buffered reader's lock would block the shutdown.
            while os.read(0, 4096):
                pass
            os._exit(1)

        threading.Thread(target=watch_stdin, daemon=True).start()
    security = pserver_client.load_security(
        ca_file=options.tls_ca,
        cert_file=options.tls_cert,
        key_file=options.tls_key,
        token_file=options.token_file,
        server_name=options.tls_server_name,
    )
    client = pserver_client.connect(master=options.master, name=options.name, **security)
    # Every trainer proposes the same dataset and the same initial weights; the first counts.
    dataset = {"files": {"globs": [options.data], "task_bytes": options.task_bytes}}
    if options.task_timeout_ms:
        dataset["task_timeout_ms"] = options.task_timeout_ms
    client.set_dataset(dataset)
    client.init_params(
        initial_params(options.hidden, options.seed),
        {"adam": {}, "learning_rate": {"base": options.learning_rate}},
    )
    report("ready")

    def train(batch, pass_):
        started = int(time.time() * 1000)
        pixels = np.stack([x for x, _ in batch])
        labels = np.array([y for _, y in batch])

        def fn(ctx):
            loss, grads = gradients(ctx.get_params(PARAM_NAMES), pixels, labels)
            ctx.send_grads(grads)
            return loss

        loss = client.step(fn)
        report("step", **{"pass": pass_, "loss": loss, "samples": len(batch), "started": started})

    for pass_ in range(options.passes):
        for task in client.tasks(pass_):
            batch = []
            for line in pserver_client.read_records(task):
                batch.append(from_csv_line(line))
                if len(batch) == options.batch:
                    train(batch, pass_)
                    batch = []
            if batch:
                train(batch, pass_)
        report("pass over", **{"pass": pass_})
    client.close()
    report("done")


if __name__ == "__main__":
    options = parse_args()
    try:
        main(options)
    except Exception as err:  # one line for the demo, and a failing exit status
        failure = {"event": "failed", "error": f"{type(err).__name__}: {err}"}
        print(json.dumps(failure, separators=(",", ":")), flush=True)
        os._exit(1)
    # Exits at once when done: the pipe on standard input would keep the process alive.
    os._exit(0)
