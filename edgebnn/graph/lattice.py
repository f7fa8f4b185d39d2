"""The lattice of a node's reachable output codes: per channel, every value the node can produce
is ``base + k * step`` for an integer ``k`` (``step`` 0: the channel is a constant ``base``).

It follows from the structure of the codes, not from data. A sum of ``n`` terms of +-1 is
congruent to ``n`` modulo 2, so a dense or convolution over binary inputs with odd weights
reaches every other integer only. In general a weighted sum ``sum_j w_j x_j + b`` whose input
``x_j`` lies on ``a_j + d_j Z`` lies on ``sum_j w_j a_j + b + gcd_j(|w_j| d_j) Z``: a common factor
of the weight codes, the input grid's structure (a threshold's levels, e.g. -1 and +1) and the
bias offset all show. The lattice of an op's output from its input's:

- input, cast (and any op not listed): every code (step 1);
- threshold: its levels per channel (step the gcd of their differences);
- dense, conv2d: the weighted sum above, on the accumulator's codes (products and bias scaled
  onto its grid); a padded convolution's windows also read the pad code;
- pad2d: its input's, with the pad code too (the padded positions hold it);
- maxpool2d: its input's (a maximum is one of its inputs);
- avgpool2d: the window sums of its input's, on its finer grid;
- flatten: its input's, per flat feature.

``freeze`` enumerates only these values to place thresholds (``freeze/passes/thresholds.py``)
and records the lattice on the threshold node. Nothing here imports TensorFlow or hls4ml.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .node import Node


def lattice(node: Node, source: Callable[[str], Node]) -> tuple[np.ndarray, np.ndarray]:
    """(base, step) int64 arrays, one entry per channel (the last axis) of ``node``, with
    ``0 <= base < step`` where ``step > 0``; ``source(name)`` returns the node of that name."""
    channels = int(node.shape[-1])
    every = (np.zeros(channels, dtype=np.int64), np.ones(channels, dtype=np.int64))
    if node.op == "threshold":
        lv = np.asarray(node.params["levels"], dtype=np.int64)
        step = np.array([_gcd(np.diff(row)) for row in lv], dtype=np.int64)
        return _reduced(lv[:, 0], step)
    if node.op in ("dense", "conv2d"):
        src = source(node.inputs[0])
        return _weighted(node, src, *lattice(src, source))
    if node.op == "maxpool2d":
        return lattice(source(node.inputs[0]), source)
    if node.op == "pad2d":
        base, step = lattice(source(node.inputs[0]), source)
        pad = int(node.attrs["pad_code"])
        return _reduced(base, np.array([_gcd([s, pad - b]) for b, s in zip(base, step)], dtype=np.int64))
    if node.op == "avgpool2d":
        src = source(node.inputs[0])
        base, step = lattice(src, source)
        n = int(np.prod(node.attrs["pool"]))
        scale = 2.0 ** (src.type.lsb_exp - node.type.lsb_exp)  # input codes on the output's grid, per value
        if scale < 1 or scale != int(scale) or int(scale) % n:
            return every
        r = int(scale) // n  # a window sum of n codes is its mean times n on the input grid
        return _reduced(base * n * r, step * r)
    if node.op == "flatten":
        base, step = lattice(source(node.inputs[0]), source)
        return np.resize(base, channels), np.resize(step, channels)
    return every


def _weighted(node: Node, src: Node, a: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lattice of a dense or conv2d node's sum ``sum_j w_j x_j (+ b)`` for inputs on ``a + d Z``
    per input channel, on the accumulator's codes."""
    w = np.asarray(node.params["weight"], dtype=np.int64)
    w = w.reshape(-1, w.shape[-1])  # (kh*kw*C, F): the im2col feature j reads input channel j % C
    a, d = np.resize(a, w.shape[0]), np.resize(d, w.shape[0])
    if node.op == "conv2d" and any(node.attrs["padding"][0] + node.attrs["padding"][1]):
        pad = int(node.attrs["pad_code"])  # windows at the border read the pad code instead
        d = np.array([_gcd([di, pad - ai]) for ai, di in zip(a, d)], dtype=np.int64)
    wt = node.fixed_attr("weight_type")
    shifts = [src.type.lsb_exp + wt.lsb_exp - node.type.lsb_exp]
    if "bias" in node.params:
        shifts.append(node.fixed_attr("bias_type").lsb_exp - node.type.lsb_exp)
    if min(shifts) < 0:  # not an exact accumulator (export refuses it): assume every code
        return np.zeros(w.shape[1], dtype=np.int64), np.ones(w.shape[1], dtype=np.int64)
    p = 2 ** shifts[0]  # a product's code on the accumulator grid
    base = p * (a @ w)
    step = p * np.array([_gcd(np.abs(w[:, f]) * d) for f in range(w.shape[1])], dtype=np.int64)
    if "bias" in node.params:
        q = 2 ** shifts[1]
        base = base + q * np.asarray(node.params["bias"], dtype=np.int64)
    return _reduced(base, step)


def _gcd(values) -> int:
    return math.gcd(*(int(v) for v in values)) if len(values) else 0


def _reduced(base: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    base = np.asarray(base, dtype=np.int64)
    step = np.asarray(step, dtype=np.int64)
    return np.where(step > 0, np.mod(base, np.where(step > 0, step, 1)), base), step


def on_lattice(lo: np.ndarray, hi: np.ndarray, base: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per channel, the first and last lattice codes within [lo, hi] (codes); a constant channel's
    base for both."""
    s = np.where(step > 0, step, 1)
    first = np.where(step > 0, lo + np.mod(base - lo, s), base)
    last = np.where(step > 0, hi - np.mod(hi - base, s), base)
    return first, last
