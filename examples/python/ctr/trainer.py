#!/usr/bin/python3
"""One trainer of a click-through-rate model on pserver, DLRM-style: one RemoteEmbeddingBag per
categorical feature (rows on the pservers, trained by the tables' row Adagrad), their rows
concatenated into a small MLP whose parameters live on the pservers too (RemoteParameters, Adam),
trained with BCE-with-logits on its share of the synthetic click log of data.py.

    /usr/bin/python3 examples/python/ctr/trainer.py --master 127.0.0.1:8200 --index 0 --count 2

Every trainer of a job makes the same log from the same seed and reads every count-th impression
from its index; they train one model asynchronously (each step reads the current values and
pushes its gradients). It reports what it does as one JSON line per event on stdout, the same
events as the digits trainers (ready, step, pass over, done, failed), so that it can run in the
demo (`npm run demo -- --model ctr`); every --eval-every steps and at the end it evaluates the
model on the held-out set and prints an eval event:

    {"event": "eval", "t": 1764614400000, "step": 200, "trainer": 0, "auc": 0.81, "logloss": 0.40,
     "optimal_auc": 0.86, "optimal_logloss": 0.36}

With --evaluate-only it trains nothing: it evaluates the job's model once and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any, Sequence

import numpy as np
import torch

try:
    import pserver_client
except ImportError:  # run from the repository: the package lives in clients/python
    sys.path.insert(
        0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "clients", "python")
    )
    import pserver_client
from pserver_client.torch import Prefetched, RemoteEmbeddingBag, RemoteParameters

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import DEFAULT_VOCABS, auc, logloss, make_dataset  # noqa: E402


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Trains the click-through-rate model on its share of the log.")
    parser.add_argument("--master", required=True, type=lambda v: v.split(","), help="master replicas, comma-separated")
    parser.add_argument("--index", type=int, default=0, help="this trainer's index, 0 ≤ index < count")
    parser.add_argument("--count", type=positive, default=1, help="how many trainers share the log")
    parser.add_argument("--seed", type=int, default=1, help="seed of the log and of the initial model")
    parser.add_argument("--train-size", type=positive, default=200_000, help="impressions to train on (all trainers)")
    parser.add_argument("--test-size", type=positive, default=50_000, help="held-out impressions")
    parser.add_argument(
        "--vocabs", default=",".join(map(str, DEFAULT_VOCABS)), help="each feature's vocabulary, comma-separated"
    )
    parser.add_argument("--passes", type=positive, default=1, help="passes over the share")
    parser.add_argument("--batch", type=positive, default=256, help="impressions per step")
    parser.add_argument("--dim", type=positive, default=8, help="embedding dim")
    parser.add_argument("--hidden", type=positive, default=32, help="hidden units of the MLP")
    parser.add_argument("--row-learning-rate", type=float, default=0.1, help="the tables' Adagrad rate")
    parser.add_argument("--learning-rate", type=float, default=3e-3, help="the MLP's Adam rate")
    parser.add_argument("--eval-every", type=int, default=0, help="evaluate every N steps (0: never while training)")
    parser.add_argument(
        "--final-eval", action=argparse.BooleanOptionalAction, default=True, help="evaluate when done"
    )
    parser.add_argument("--evaluate-only", action="store_true", help="train nothing: evaluate the job's model once")
    parser.add_argument(
        "--prefetch",
        action="store_true",
        help="read the next batch's rows while this one computes (rows one step stale)",
    )
    parser.add_argument("--name", help="this trainer's name (default ctr-<index>)")
    parser.add_argument("--exit-on-stdin-close", action="store_true", help="exit when standard input closes")
    return parser.parse_args(argv)


def report(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, "t": int(time.time() * 1000), **fields}), flush=True)


def click_head(inputs: int, hidden: int) -> torch.nn.Module:
    """The MLP over the concatenated rows: inputs → hidden → hidden/2 → one logit, ReLU between."""
    return torch.nn.Sequential(
        torch.nn.Linear(inputs, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden // 2),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden // 2, 1),
    )


class ClickModel(torch.nn.Module):  # type: ignore[misc]
    """Embeddings per feature, concatenated, then an MLP to one logit per impression."""

    def __init__(self, client: Any, vocabs: Sequence[int], dim: int, hidden: int) -> None:
        super().__init__()
        self.embeddings = [RemoteEmbeddingBag(client, f"feature{f}", dim, mode="sum") for f in range(len(vocabs))]
        self.head = click_head(len(vocabs) * dim, hidden)

    def forward(self, ctx: Any, ids: torch.Tensor | list[Prefetched]) -> torch.Tensor:
        # Each impression is a bag of one id per feature (a (batch, 1) input), or its prefetch.
        batches = ids if isinstance(ids, list) else [ids[:, f : f + 1] for f in range(len(self.embeddings))]
        rows = [emb(ctx, batch) for emb, batch in zip(self.embeddings, batches)]
        return self.head(torch.cat(rows, dim=1)).squeeze(1)

    def prefetch(self, ids: torch.Tensor) -> list[Prefetched]:
        """Starts reading the batch's rows of every feature, each table in its own thread."""
        return [emb.prefetch(ids[:, f : f + 1]) for f, emb in enumerate(self.embeddings)]


def exit_when_stdin_closes() -> None:
    """The demo holds the other end of standard input: when it dies, even by SIGKILL, so does this."""

    def watch() -> None:
        # os.read on the raw descriptor: a buffered reader's lock would block the shutdown.
        while os.read(0, 4096):
            pass
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def train(args: argparse.Namespace) -> None:
    vocabs = [int(v) for v in args.vocabs.split(",")]
    data = make_dataset(args.seed, args.train_size, args.test_size, vocabs)
    share = data.train.share(args.index, args.count)
    optimal = {"optimal_auc": round(data.optimal_auc, 4), "optimal_logloss": round(data.optimal_logloss, 4)}
    test_ids = torch.from_numpy(data.test.ids)

    torch.manual_seed(args.seed)  # every trainer proposes the same initial MLP; one writes it
    with pserver_client.connect(master=args.master, name=args.name or f"ctr-{args.index}") as client:
        model = ClickModel(client, vocabs, args.dim, args.hidden)
        params = RemoteParameters(
            client, model.head, optimizer={"adam": {}, "learning_rate": {"base": args.learning_rate}}, prefix="head."
        )
        params.init(
            tables=[
                emb.table_spec(
                    initializer={"uniform": {"low": -0.05, "high": 0.05}, "seed": args.seed + f},
                    optimizer={"adagrad": {}, "learning_rate": {"base": args.row_learning_rate}},
                )
                for f, emb in enumerate(model.embeddings)
            ]
        )
        loss_fn = torch.nn.BCEWithLogitsLoss()

        def evaluate(step: int) -> None:
            def fn(ctx: Any) -> np.ndarray:
                params.pull(ctx)
                with torch.no_grad():
                    out: np.ndarray = model(ctx, test_ids).numpy().astype(np.float64)
                    return out

            scores = client.step(fn)
            report(
                "eval",
                step=step,
                trainer=args.index,
                auc=round(auc(data.test.clicks, scores), 4),
                logloss=round(logloss(data.test.clicks, scores), 4),
                **optimal,
            )

        if args.evaluate_only:
            evaluate(0)
            return
        report("ready")
        steps = 0
        for pass_ in range(args.passes):
            order = np.random.default_rng([args.seed, args.index, pass_]).permutation(len(share))
            batches = [order[start : start + args.batch] for start in range(0, len(order), args.batch)]
            upcoming = model.prefetch(torch.from_numpy(share.ids[batches[0]])) if args.prefetch else None
            for b, rows in enumerate(batches):
                started = int(time.time() * 1000)
                # The batch is read before the step: a re-run after a failover reads the same one.
                ids = torch.from_numpy(share.ids[rows])
                clicks = torch.from_numpy(share.clicks[rows])
                batch: torch.Tensor | list[Prefetched] = ids
                if upcoming is not None:
                    # This batch's rows were read during the last step; the next one's now.
                    batch = upcoming
                    upcoming = model.prefetch(torch.from_numpy(share.ids[batches[b + 1]])) if b + 1 < len(batches) else None

                def fn(ctx: Any) -> float:
                    params.pull(ctx)
                    loss = loss_fn(model(ctx, batch), clicks)
                    loss.backward()
                    params.push(ctx, sample_count=len(rows))
                    return float(loss)

                loss = client.step(fn)
                steps += 1
                report("step", **{"pass": pass_, "loss": loss, "samples": len(rows), "started": started})
                if args.eval_every and steps % args.eval_every == 0:
                    evaluate(steps)
            report("pass over", **{"pass": pass_})
        if args.final_eval and (not args.eval_every or steps % args.eval_every):
            evaluate(steps)
    report("done")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.exit_on_stdin_close:
        exit_when_stdin_closes()
    try:
        train(args)
    except Exception as err:  # one line for the demo, and a failing exit status
        report("failed", error=f"{type(err).__name__}: {err}")
        sys.stdout.flush()
        os._exit(1)
    # Exits at once: a pipe on standard input would keep the process alive.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
