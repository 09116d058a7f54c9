#!/usr/bin/env python3
"""The bit-exact reference of conformance/sync_steps.json, in one process with numpy float32.

It trains the scenario's model as a SYNC job must: at each step every trainer with data computes
its gradient from the same parameters (those after the step before), the gradients are averaged
weighted by their sample counts, folded in ascending trainer order, and the mean is applied once
by the tensor's optimizer. Every float32 operation is rounded on its own, in the order of the
pserver's kernels (libs/optimizer/src/kernels), so the result is the one set of bits a correct
server reaches on any number of shards. Prints, as JSON, each tensor's values and optimizer state
(slots as base64 of their little-endian float32 bytes, Adam's running β powers as numbers).

    python3 sync_steps_reference.py [sync_steps.json]
"""

import base64
import json
import math
import os
import sys

import numpy as np

F32 = np.float32
MASK = 0xFFFFFFFF


def fmix32(h):
    h = h ^ (h >> 16)
    h = (h * 0x85EBCA6B) & MASK
    h = h ^ (h >> 13)
    h = (h * 0xC2B2AE35) & MASK
    return h ^ (h >> 16)


def gradient(t, k, i, p):
    """The scenario's gradient of trainer t at step k for tensor i, whose values read were p."""
    j = np.arange(p.size, dtype=np.uint64)
    x = (t * 0x9E3779B1 + k * 0x85EBCA77 + i * 0xC2B2AE3D + j * 0x27D4EB2F) & MASK
    h = fmix32(x)
    sign = np.where(h & 1, -1.0, 1.0)
    mantissa = (2**23 + ((h >> 1) & 0x7FFFFF)).astype(np.float64)
    exponent = ((h >> 24) & 15).astype(np.int64) - 8 - 23
    f = sign * np.ldexp(mantissa, exponent)
    return (f + p.astype(np.float64) / 8).astype(F32)


def weighted_mean(contributions):
    """acc = w1*g1, acc = acc + wi*gi in ascending trainer order, then acc / sum(w), in float32."""
    acc = None
    total = 0
    for weight, g in contributions:
        term = F32(weight) * g
        acc = term if acc is None else acc + term
        total += weight
    return acc / F32(total)


class Adam:
    slots = ("m", "v")

    def __init__(self, config, n):
        self.lr = config["learningRate"]["base"]
        adam = config["adam"]
        self.beta1, self.beta2, self.eps = adam["beta1"], adam["beta2"], adam["epsilon"]
        self.state = {"m": np.zeros(n, F32), "v": np.zeros(n, F32)}
        self.scalars = {"beta1Power": 1.0, "beta2Power": 1.0}

    def update(self, p, g):
        # The step's scalars in float64, as the optimizer computes them, then each rounded once.
        self.scalars["beta1Power"] *= self.beta1
        self.scalars["beta2Power"] *= self.beta2
        correction2 = math.sqrt(1 - self.scalars["beta2Power"])
        lr_t = F32(self.lr * correction2 / (1 - self.scalars["beta1Power"]))
        eps = F32(self.eps * correction2)
        b1, omb1 = F32(self.beta1), F32(1 - self.beta1)
        b2, omb2 = F32(self.beta2), F32(1 - self.beta2)
        m, v = self.state["m"], self.state["v"]
        m[:] = b1 * m + omb1 * g
        v[:] = b2 * v + omb2 * (g * g)
        p[:] = p - lr_t * (m / (np.sqrt(v) + eps))


class NesterovSgd:
    slots = ("momentum",)

    def __init__(self, config, n):
        self.lr = F32(config["learningRate"]["base"])
        self.mu = F32(config["sgd"]["momentum"])
        self.state = {"momentum": np.zeros(n, F32)}
        self.scalars = {}

    def update(self, p, g):
        v = self.state["momentum"]
        lrd = self.lr * g
        v[:] = self.mu * v - lrd
        p[:] = p + (self.mu * v - lrd)


def optimizer_of(config, n):
    if "adam" in config:
        return Adam(config, n)
    if config.get("sgd", {}).get("nesterov"):
        return NesterovSgd(config, n)
    raise ValueError(f"the reference knows Adam and Nesterov SGD, not {config}")


def train(scenario):
    tensors = scenario["tensors"]
    params = [((np.arange(t["length"]) % 7 - 3) / 4).astype(F32) for t in tensors]
    optimizers = [optimizer_of(t["optimizer"], t["length"]) for t in tensors]
    trainers = sorted(scenario["trainers"], key=lambda trainer: trainer["id"])
    for k in range(1, scenario["steps"] + 1):
        active = [trainer["id"] for trainer in trainers if k <= trainer["dataSteps"]]
        grads = [
            [(1 + (t + k) % 3, gradient(t, k, i, p)) for t in active]
            for i, p in enumerate(params)
        ]
        for p, optimizer, contributions in zip(params, optimizers, grads):
            optimizer.update(p, weighted_mean(contributions))
    return {
        t["name"]: {
            "values": encode(p),
            "updates": scenario["steps"],
            "slots": {name: encode(optimizer.state[name]) for name in optimizer.slots},
            "scalars": optimizer.scalars,
        }
        for t, p, optimizer in zip(tensors, params, optimizers)
    }


def encode(array):
    return base64.b64encode(array.astype("<f4").tobytes()).decode()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "conformance", "sync_steps.json")
    with open(path, encoding="utf-8") as f:
        scenario = json.load(f)
    with np.errstate(over="raise", invalid="raise"):
        print(json.dumps(train(scenario)))


if __name__ == "__main__":
    main()
