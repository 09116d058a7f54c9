#!/usr/bin/python3
"""The click model of trainer.py trained by PyTorch alone, in one process, and two bounds on the
held-out AUC, to tell what of the gap to the planted optimum is the model's and the data's and
what the parameter server's:

- `local_auc`: the same model (torch.nn.EmbeddingBag per feature with sparse gradients and
  torch.optim.Adagrad, the MLP with torch.optim.Adam, the same rates, initial ranges and batches)
  trained on the whole training log in one process, one step after another.
- `seen_ids_auc`: the true logit with what no model could learn from this log left out: the
  weights and factors of every id that never occurs in the training log set to 0 (their mean).
- `optimal_auc`: the true logit itself.

    /usr/bin/python3 examples/python/ctr/local_baseline.py --seed 1

prints one JSON line with the three (and the log-losses).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import DEFAULT_VOCABS, INTERACTION_SCALE, BIAS, auc, logloss, make_dataset, truth  # noqa: E402
from trainer import click_head  # noqa: E402


class LocalClickModel(torch.nn.Module):  # type: ignore[misc]
    """trainer.py's ClickModel with the tables in this process."""

    def __init__(self, vocabs: Sequence[int], dim: int, hidden: int) -> None:
        super().__init__()
        self.embeddings = torch.nn.ModuleList(
            [torch.nn.EmbeddingBag(v, dim, mode="sum", sparse=True) for v in vocabs]
        )
        for emb in self.embeddings:
            torch.nn.init.uniform_(emb.weight, -0.05, 0.05)
        self.head = click_head(len(vocabs) * dim, hidden)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        rows = [emb(ids[:, f : f + 1]) for f, emb in enumerate(self.embeddings)]
        return self.head(torch.cat(rows, dim=1)).squeeze(1)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Trains the click model in one process, with PyTorch alone.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train-size", type=int, default=200_000)
    parser.add_argument("--test-size", type=int, default=50_000)
    parser.add_argument("--vocabs", default=",".join(map(str, DEFAULT_VOCABS)))
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--dim", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--row-learning-rate", type=float, default=0.1)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    args = parser.parse_args(argv)
    vocabs = [int(v) for v in args.vocabs.split(",")]
    data = make_dataset(args.seed, args.train_size, args.test_size, vocabs)

    torch.manual_seed(args.seed)
    model = LocalClickModel(vocabs, args.dim, args.hidden)
    rows = torch.optim.Adagrad(model.embeddings.parameters(), lr=args.row_learning_rate, eps=1e-10)
    dense = torch.optim.Adam(model.head.parameters(), lr=args.learning_rate)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for pass_ in range(args.passes):
        order = np.random.default_rng([args.seed, pass_]).permutation(len(data.train))
        for start in range(0, len(order), args.batch):
            batch = order[start : start + args.batch]
            rows.zero_grad()
            dense.zero_grad()
            loss_fn(model(torch.from_numpy(data.train.ids[batch])), torch.from_numpy(data.train.clicks[batch])).backward()
            rows.step()
            dense.step()
    with torch.no_grad():
        scores = model(torch.from_numpy(data.test.ids)).numpy().astype(np.float64)

    # The truth, knowing only the ids the training log shows.
    weights, pairs, factors = truth(args.seed, vocabs)
    seen = [np.isin(np.arange(v), data.train.ids[:, f]) for f, v in enumerate(vocabs)]
    ids = data.test.ids
    known = np.full(len(data.test), BIAS)
    for f in range(len(vocabs)):
        known += np.where(seen[f], weights[f], 0.0)[ids[:, f]]
    for (a, b), (u, v) in zip(pairs, factors):
        known += INTERACTION_SCALE * np.where(seen[a], u, 0.0)[ids[:, a]] * np.where(seen[b], v, 0.0)[ids[:, b]]

    clicks = data.test.clicks
    print(
        json.dumps(
            {
                "seed": args.seed,
                "local_auc": round(auc(clicks, scores), 4),
                "seen_ids_auc": round(auc(clicks, known), 4),
                "optimal_auc": round(data.optimal_auc, 4),
                "local_logloss": round(logloss(clicks, scores), 4),
                "seen_ids_logloss": round(logloss(clicks, known), 4),
                "optimal_logloss": round(data.optimal_logloss, 4),
            }
        )
    )


if __name__ == "__main__":
    main()
