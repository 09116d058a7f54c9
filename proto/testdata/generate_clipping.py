#!/usr/bin/env python3
"""Writes clipping.json: test vectors of the clients' global-norm clipping, computed with plain
Python floats (IEEE doubles) and struct, independently of numpy and of any client library, so
every language's client checks itself against the same bytes.

Rule (proto/README.md, "Global-norm clipping"): of one push's dense gradients, only FLOAT32 and
FLOAT64 ones count and are scaled. norm = sqrt(s), where s adds x * x (x as a double, the
product a double) of every element, one at a time in a double: tensors in name order (Unicode
code points, i.e. UTF-8 bytes), elements in index order. When norm > max_norm (never for a NaN
norm), scale = max_norm / norm and each element becomes x * scale computed in doubles, then
rounded to its type (to nearest, ties to even); otherwise every gradient is sent unchanged.

Run: python3 proto/testdata/generate_clipping.py > proto/testdata/clipping.json
"""
import json
import math
import random
import struct

FORMAT = {"ELEMENT_TYPE_FLOAT32": "<f", "ELEMENT_TYPE_FLOAT64": "<d", "ELEMENT_TYPE_INT32": "<i", "ELEMENT_TYPE_FLOAT16": "<e"}


def encode(element_type, values):
    return b"".join(struct.pack(FORMAT[element_type], v) for v in values)


def decode(element_type, content):
    size = struct.calcsize(FORMAT[element_type])
    return [struct.unpack(FORMAT[element_type], content[i : i + size])[0] for i in range(0, len(content), size)]


def clipped(grads, max_norm, order=sorted):
    """The norm and each gradient's bytes after clipping; `order` picks the tensors' order."""
    floats = {g["name"]: g for g in grads if g["elementType"] in ("ELEMENT_TYPE_FLOAT32", "ELEMENT_TYPE_FLOAT64")}
    s = 0.0
    for name in order([g["name"] for g in grads]):
        if name in floats:
            for x in decode(floats[name]["elementType"], floats[name]["content"]):
                s += x * x
    norm = math.sqrt(s)
    out = {}
    for g in grads:
        if g["name"] in floats and norm > max_norm:
            scale = max_norm / norm
            # struct packs a double into a float rounding to nearest, as a C cast does.
            out[g["name"]] = encode(g["elementType"], [x * scale for x in decode(g["elementType"], g["content"])])
        else:
            out[g["name"]] = g["content"]
    return norm, out


def grad(name, element_type, values):
    return {"name": name, "elementType": element_type, "content": encode(element_type, values)}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def cases():
    rng = random.Random(20240611)
    spread = [f32(rng.uniform(-3, 3)) for _ in range(64)]
    yield "under the bound: sent unchanged", 10.0, [grad("w", "ELEMENT_TYPE_FLOAT32", [0.5, -1.25, 2.0])]
    yield "exactly at the bound: sent unchanged", 5.0, [
        grad("a", "ELEMENT_TYPE_FLOAT64", [3.0]),
        grad("b", "ELEMENT_TYPE_FLOAT64", [4.0]),
    ]
    yield "over the bound: 3-4-5 scaled to norm 1", 1.0, [
        grad("a", "ELEMENT_TYPE_FLOAT64", [3.0]),
        grad("b", "ELEMENT_TYPE_FLOAT64", [4.0]),
    ]
    yield "float32 products rounded from doubles, not multiplied in float32", 1.5, [
        grad("w", "ELEMENT_TYPE_FLOAT32", spread),
    ]
    yield "float32 and float64 together; integer and float16 gradients neither counted nor scaled", 0.75, [
        grad("w", "ELEMENT_TYPE_FLOAT32", spread[:16]),
        grad("b", "ELEMENT_TYPE_FLOAT64", [rng.uniform(-1, 1) for _ in range(7)]),
        grad("counts", "ELEMENT_TYPE_INT32", [5, -7, 1 << 20]),
        grad("half", "ELEMENT_TYPE_FLOAT16", [300.0, -2.5]),
    ]
    # 1e16 + 1 rounds back to 1e16 in a double: the order of the additions shows in the norm.
    yield "tensors in name order, not the order given", 1.0, [
        grad("z", "ELEMENT_TYPE_FLOAT64", [1.0]),
        grad("a", "ELEMENT_TYPE_FLOAT64", [1.0]),
        grad("m", "ELEMENT_TYPE_FLOAT64", [1e8]),
    ]
    yield "elements one at a time, not in pairs", 1.0, [
        grad("w", "ELEMENT_TYPE_FLOAT64", [1e8] + [1.0] * 15),
    ]
    # By code point U+FF41 < U+1F642 < U+20000; by UTF-16 code unit U+1F642 < U+20000 < U+FF41.
    yield "names in code point order, not UTF-16's", 1.0, [
        grad("\U00020000", "ELEMENT_TYPE_FLOAT64", [1e8]),
        grad("\U0001f642", "ELEMENT_TYPE_FLOAT64", [1.0]),
        grad("\uff41", "ELEMENT_TYPE_FLOAT64", [1.0]),
    ]
    yield "an empty gradient counts nothing", 2.0, [
        grad("empty", "ELEMENT_TYPE_FLOAT32", []),
        grad("w", "ELEMENT_TYPE_FLOAT32", [3.0, 4.0]),
    ]


def utf16_order(names):
    return sorted(names, key=lambda n: n.encode("utf-16-be"))


def pairwise_sum_differs(grads, max_norm):
    # numpy's sum adds eight running sums for arrays of eight elements or more.
    [g] = grads
    squares = [x * x for x in decode(g["elementType"], g["content"])]
    lanes = [0.0] * 8
    for i, v in enumerate(squares):
        lanes[i % 8] += v
    return math.sqrt(sum(lanes)) != clipped(grads, max_norm)[0]


def float32_products(grads, scale):
    # A product of two floats is exact in a double: rounding it once is float32 multiplication.
    [g] = grads
    return encode(g["elementType"], [f32(x) * f32(scale) for x in decode(g["elementType"], g["content"])])


def main():
    vectors = []
    for title, max_norm, grads in cases():
        norm, out = clipped(grads, max_norm)
        # Each ordering vector must tell the rule from the mistake it names.
        if "not the order given" in title:
            assert clipped(grads, max_norm, order=list)[0] != norm, title
        if "code point" in title:
            assert clipped(grads, max_norm, order=utf16_order)[0] != norm, title
        if "not in pairs" in title:
            assert pairwise_sum_differs(grads, max_norm), title
        if "not multiplied in float32" in title:
            assert float32_products(grads, max_norm / norm) != out[grads[0]["name"]], title
        vectors.append(
            {
                "title": title,
                "maxNorm": max_norm,
                "norm": norm,
                "clipped": norm > max_norm,
                "grads": [
                    {
                        "name": g["name"],
                        "elementType": g["elementType"],
                        "contentHex": g["content"].hex(),
                        "clippedHex": out[g["name"]].hex(),
                    }
                    for g in grads
                ],
            }
        )
    doc = {
        "comment": "Generated by proto/testdata/generate_clipping.py; see proto/README.md, Global-norm clipping. "
        "Gradients are given in this order; contents are little-endian bytes in hex.",
        "vectors": vectors,
    }
    print(json.dumps(doc, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
