#!/usr/bin/env python3
"""Writes row-golden.json: the row optimizers' expected bits, computed from the formulas in
libs/optimizer/README.md ("Row optimizers") with numpy float32, independently of the TypeScript.

Arithmetic rule: the scalars of a step (learning rate, Adam's corrected rate and epsilon) are
Python floats (IEEE float64), rounded once to float32; every per-element operation is one numpy
float32 operation (correctly rounded, no fused multiply-add). Table bias correction multiplies
float64 running products of beta; row bias correction keeps float32 products in the row. No pow.

Run: /usr/bin/python3 libs/optimizer/test-support/generate_row_golden.py \
       > libs/optimizer/test-support/row-golden.json
"""
import json
import math

import numpy as np

F = np.float32


def f32(x) -> np.float32:
    """A float64 value rounded once to float32."""
    return F(x)


def checked(x: np.float32) -> np.float32:
    # Python floats mixed into numpy scalars can widen to float64; every value here must not.
    assert type(x) is np.float32, type(x)
    return x


def hexes(values) -> str:
    return " ".join(f"{int(b):08x}" for b in np.asarray(values, dtype=np.float32).view(np.uint32))


def learning_rate(lr: dict, t: int) -> float:
    base = lr["base"]
    if "linear" in lr:
        return max(base - lr["linear"]["decayA"] * t, lr["linear"]["decayB"])
    return base


class Rule:
    """One rule over a table of rows [values (dim) | state]."""

    def __init__(self, config: dict, dim: int):
        self.config = config
        self.dim = dim
        self.table_t = 0
        self.table_p1 = 1.0
        self.table_p2 = 1.0

    def state_floats(self) -> int:
        c, d = self.config, self.dim
        if "sgd" in c:
            return 0
        if "adagrad" in c:
            return d
        if "rowwiseAdagrad" in c:
            return 1
        if c["adam"].get("biasCorrection", "table") == "row":
            return 2 * d + 2
        return 2 * d

    def initial_state(self) -> list:
        c, d = self.config, self.dim
        if "adagrad" in c:
            return [F(c["adagrad"].get("initialAccumulator", 0.0))] * d
        if "rowwiseAdagrad" in c:
            return [F(c["rowwiseAdagrad"].get("initialAccumulator", 0.0))]
        if "adam" in c:
            moments = [F(0)] * (2 * d)
            if c["adam"].get("biasCorrection", "table") == "row":
                return moments + [F(1), F(1)]
            return moments
        return []

    def update(self, w: list, s: list, g: list, t: int) -> None:
        """Updates values w and state s of one row in place with gradient g at table step t."""
        c, d = self.config, self.dim
        lr = learning_rate(c["learningRate"], t)
        if "sgd" in c:
            a = f32(lr)
            for i in range(d):
                w[i] = checked(w[i] - a * g[i])
        elif "adagrad" in c:
            a, eps = f32(lr), f32(c["adagrad"].get("epsilon", 1e-10))
            for i in range(d):
                s[i] = checked(s[i] + g[i] * g[i])
                w[i] = checked(w[i] - a * (g[i] / (np.sqrt(s[i]) + eps)))
        elif "rowwiseAdagrad" in c:
            a, eps = f32(lr), f32(c["rowwiseAdagrad"].get("epsilon", 1e-10))
            lanes = [F(0)] * 4
            for i in range(d):
                lanes[i % 4] = checked(lanes[i % 4] + g[i] * g[i])
            mean = checked(((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) / F(d))
            s[0] = checked(s[0] + mean)
            step = checked(a / (np.sqrt(s[0]) + eps))
            for i in range(d):
                w[i] = checked(w[i] - step * g[i])
        else:
            p = c["adam"]
            beta1, beta2, eps = p.get("beta1", 0.9), p.get("beta2", 0.999), p.get("epsilon", 1e-8)
            if p.get("biasCorrection", "table") == "row":
                s[2 * d] = checked(s[2 * d] * F(beta1))
                s[2 * d + 1] = checked(s[2 * d + 1] * F(beta2))
                p1, p2 = float(s[2 * d]), float(s[2 * d + 1])
            else:
                if t < self.table_t:
                    self.table_t, self.table_p1, self.table_p2 = 0, 1.0, 1.0
                while self.table_t < t:
                    self.table_p1 *= beta1
                    self.table_p2 *= beta2
                    self.table_t += 1
                p1, p2 = self.table_p1, self.table_p2
            # The bias corrections fold into the rate and epsilon:
            # lr * m_hat / (sqrt(v_hat) + eps) = lr_t * m / (sqrt(v) + eps * sqrt(1 - beta2^t)).
            lr_t = f32(lr * math.sqrt(1.0 - p2) / (1.0 - p1))
            eps_t = f32(eps * math.sqrt(1.0 - p2))
            b1, b2, c1, c2 = F(beta1), F(beta2), f32(1.0 - beta1), f32(1.0 - beta2)
            for i in range(d):
                m = checked(b1 * s[i] + c1 * g[i])
                v = checked(b2 * s[d + i] + c2 * (g[i] * g[i]))
                s[i], s[d + i] = m, v
                w[i] = checked(w[i] - lr_t * (m / (np.sqrt(v) + eps_t)))


# Gradients over many magnitudes: zeros, a negative zero, tiny (1e-30 squares to 0 in float32;
# 1e-40 is subnormal) and large (1e18 squares to 1e36, near the float32 limit).
GRADIENTS = [
    [0.5, -0.25, 1.0, -2.0, 0.125, 3.0, -0.75],
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [1e-30, -1e-40, 1e18, -3e4, -0.0, 7.0, 1e-3],
    [-1.5, 2.5, -1e-6, 1e6, 0.3, -0.3, 0.0],
    [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
]
INITIAL = [0.3, -0.7, 1.25, 0.0, -2.0, 0.01, 5.5, -0.125, 0.9, -3.0, 1e-3, 2.0, -0.5, 0.75]

# (table step, rows updated); the table has 3 rows, row 2 is never updated.
SCHEDULE = [(1, [0, 1]), (2, [1]), (3, [0, 1]), (7, [0]), (8, [1, 0])]

CASES = [
    ("sgd", {"sgd": {}, "learningRate": {"base": 0.1}}),
    ("adagrad", {"adagrad": {}, "learningRate": {"base": 0.1}}),
    (
        "adagrad, initial accumulator",
        {"adagrad": {"initialAccumulator": 0.1, "epsilon": 1e-6}, "learningRate": {"base": 0.05}},
    ),
    ("row-wise adagrad", {"rowwiseAdagrad": {}, "learningRate": {"base": 0.1}}),
    (
        "row-wise adagrad, linear rate",
        {
            "rowwiseAdagrad": {"initialAccumulator": 1.0},
            "learningRate": {"base": 0.1, "linear": {"decayA": 0.01, "decayB": 0.02}},
        },
    ),
    (
        "adam, table bias correction",
        {"adam": {"biasCorrection": "table"}, "learningRate": {"base": 0.01}},
    ),
    (
        "adam, table bias correction, betas",
        {"adam": {"beta1": 0.5, "beta2": 0.75, "epsilon": 1e-3}, "learningRate": {"base": 0.1}},
    ),
    (
        "adam, row bias correction",
        {"adam": {"biasCorrection": "row"}, "learningRate": {"base": 0.01}},
    ),
    (
        "adam, row bias correction, betas",
        {
            "adam": {"biasCorrection": "row", "beta1": 0.5, "beta2": 0.75, "epsilon": 1e-3},
            "learningRate": {"base": 0.1},
        },
    ),
]

ROWS = 3


def run(name: str, config: dict, dim: int) -> dict:
    rule = Rule(config, dim)
    values = [[F(INITIAL[(r * dim + i) % len(INITIAL)]) for i in range(dim)] for r in range(ROWS)]
    states = [rule.initial_state() for _ in range(ROWS)]
    assert all(len(s) == rule.state_floats() for s in states)

    def table() -> str:
        return hexes([x for r in range(ROWS) for x in values[r] + states[r]])

    case = {"name": f"{name}, dim {dim}", "config": config, "dim": dim, "rows": ROWS}
    case["values"] = hexes([x for row in values for x in row])
    case["initial"] = table()
    steps = []
    for k, (t, rows) in enumerate(SCHEDULE):
        grads = []
        for r in rows:
            g = [F(GRADIENTS[(k + r) % len(GRADIENTS)][i % 7] * (1 + r)) for i in range(dim)]
            rule.update(values[r], states[r], g, t)
            grads.extend(g)
        steps.append({"step": t, "rows": rows, "grads": hexes(grads), "expected": table()})
    case["steps"] = steps
    return case


def main() -> None:
    cases = [run(name, config, dim) for name, config in CASES for dim in (4, 7)]
    out = {
        "comment": "Generated by libs/optimizer/test-support/generate_row_golden.py; float32 bits "
        "as hex, each table row [values | state]. See libs/optimizer/README.md, Row optimizers.",
        "cases": cases,
    }
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
