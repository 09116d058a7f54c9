"""A synthetic click log with a known truth, made from a seed with numpy only.

Each impression has one id per categorical feature, drawn Zipf-like from the feature's vocabulary
(a few ids are frequent, most are rare; which ids are the frequent ones is a permutation drawn from
the seed). Its true logit is

    bias + Σ_f w_f[id_f] + s · u[id_0] · v[id_1] (+ s · u'[id_2] · v'[id_3] with 4 features)

with per-id weights w_f ~ N(0, σ_f²) and per-id factors u, v ~ N(0, 1) of a planted pairwise
interaction, and the click is Bernoulli(sigmoid(logit)). Because the logit is known, so is the
best any model can do on a held-out set: ranking it by the true logit gives `optimal_auc`, and
predicting sigmoid(logit) gives `optimal_logloss`.

    /usr/bin/python3 examples/python/ctr/data.py --seed 1     # prints the log's summary as JSON

The same seed and sizes give the same log on every machine (numpy's PCG64 and only its
documented, stable draws), so trainers each make the log and read their share of it.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: The vocabulary of each feature, the full size of the example.
DEFAULT_VOCABS = (1_000, 5_000, 20_000, 100_000)
#: The spread of each feature's per-id weights (a frequent feature matters less per id).
WEIGHT_SCALES = (0.6, 0.8, 1.0, 1.0)
#: The strength of the planted interactions.
INTERACTION_SCALE = 0.7
#: The Zipf exponent of the id draws.
ZIPF_EXPONENT = 1.1
#: The bias, which sets the click rate near 20 %.
BIAS = -2.0


@dataclass(frozen=True)
class ClickLog:
    """`ids` (int64, impressions × features), `clicks` (float32, 0 or 1) and `logits` (float64,
    the true logit of each impression)."""

    ids: np.ndarray
    clicks: np.ndarray
    logits: np.ndarray

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def share(self, index: int, count: int) -> "ClickLog":
        """Trainer `index` of `count`'s part: every count-th impression from the index-th."""
        if not 0 <= index < count:
            raise ValueError(f"index: 0 ≤ index < {count} expected, got {index}")
        return ClickLog(self.ids[index::count], self.clicks[index::count], self.logits[index::count])


@dataclass(frozen=True)
class Dataset:
    vocabs: tuple[int, ...]
    train: ClickLog
    test: ClickLog

    @property
    def optimal_auc(self) -> float:
        """The held-out AUC of the true logit: no model ranks the held-out clicks better, in
        expectation."""
        return auc(self.test.clicks, self.test.logits)

    @property
    def optimal_logloss(self) -> float:
        """The held-out log-loss of the true click probability."""
        return logloss(self.test.clicks, self.test.logits)


def make_dataset(
    seed: int, train_size: int, test_size: int, vocabs: Sequence[int] = DEFAULT_VOCABS
) -> Dataset:
    """The click log of `seed`: `train_size` then `test_size` impressions of the same
    distribution (the held-out set is the log's tail)."""
    if not 2 <= len(vocabs) <= len(WEIGHT_SCALES):
        raise ValueError(f"vocabs: 2 to {len(WEIGHT_SCALES)} features expected, got {len(vocabs)}")
    rng = np.random.default_rng(seed)
    n = train_size + test_size
    weights, pairs, factors = _draw_truth(rng, vocabs)
    frequent_first = [rng.permutation(v) for v in vocabs]

    ids = np.empty((n, len(vocabs)), dtype=np.int64)
    for f, v in enumerate(vocabs):
        p = 1.0 / np.arange(1, v + 1, dtype=np.float64) ** ZIPF_EXPONENT
        ids[:, f] = frequent_first[f][rng.choice(v, size=n, p=p / p.sum())]

    logits = np.full(n, BIAS)
    for f in range(len(vocabs)):
        logits += weights[f][ids[:, f]]
    for (a, b), (u, v) in zip(pairs, factors):
        logits += INTERACTION_SCALE * u[ids[:, a]] * v[ids[:, b]]
    clicks = (rng.random(n) < sigmoid(logits)).astype(np.float32)

    log = ClickLog(ids, clicks, logits)
    return Dataset(
        vocabs=tuple(vocabs),
        train=ClickLog(log.ids[:train_size], log.clicks[:train_size], log.logits[:train_size]),
        test=ClickLog(log.ids[train_size:], log.clicks[train_size:], log.logits[train_size:]),
    )


def truth(
    seed: int, vocabs: Sequence[int]
) -> tuple[list[np.ndarray], list[tuple[int, int]], list[tuple[np.ndarray, np.ndarray]]]:
    """The log's truth alone: each feature's per-id weights, the interacting feature pairs and
    their per-id factors (the first draws of the seed, the same whatever the log's size)."""
    return _draw_truth(np.random.default_rng(seed), vocabs)


def _draw_truth(
    rng: np.random.Generator, vocabs: Sequence[int]
) -> tuple[list[np.ndarray], list[tuple[int, int]], list[tuple[np.ndarray, np.ndarray]]]:
    # The truth first, so that it does not depend on the log's size.
    weights = [rng.normal(0.0, WEIGHT_SCALES[f], size=v) for f, v in enumerate(vocabs)]
    pairs = [(0, 1)] + ([(2, 3)] if len(vocabs) >= 4 else [])
    factors = [(rng.normal(size=vocabs[a]), rng.normal(size=vocabs[b])) for a, b in pairs]
    return weights, pairs, factors


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))


def auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The area under the ROC curve by ranking (Mann–Whitney U), ties given their average rank:
    the chance that a random click scores above a random non-click, ties counted half."""
    labels = np.asarray(labels) > 0.5
    scores = np.asarray(scores, dtype=np.float64)
    positives = int(labels.sum())
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        raise ValueError(f"auc: needs clicks and non-clicks, got {positives} and {negatives}")
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    # Average 1-based rank of each run of equal scores.
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    ends = np.r_[starts[1:], len(scores)]
    run_rank = (starts + ends + 1) / 2.0
    ranks = np.empty(len(scores))
    ranks[order] = np.repeat(run_rank, ends - starts)
    u = ranks[labels].sum() - positives * (positives + 1) / 2.0
    return float(u / (positives * negatives))


def logloss(labels: np.ndarray, logits: np.ndarray) -> float:
    """The mean binary cross-entropy of predicting sigmoid(logits), computed from the logits
    (stable for large ones)."""
    y = np.asarray(labels, dtype=np.float64)
    z = np.asarray(logits, dtype=np.float64)
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Summarizes the synthetic click log of a seed.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train-size", type=int, default=200_000)
    parser.add_argument("--test-size", type=int, default=50_000)
    parser.add_argument("--vocabs", default=",".join(map(str, DEFAULT_VOCABS)), help="comma-separated sizes")
    args = parser.parse_args(argv)
    data = make_dataset(args.seed, args.train_size, args.test_size, [int(v) for v in args.vocabs.split(",")])
    print(
        json.dumps(
            {
                "vocabs": list(data.vocabs),
                "train": len(data.train),
                "test": len(data.test),
                "click_rate": round(float(data.train.clicks.mean()), 4),
                "optimal_auc": round(data.optimal_auc, 4),
                "optimal_logloss": round(data.optimal_logloss, 4),
            }
        )
    )


if __name__ == "__main__":
    main()
