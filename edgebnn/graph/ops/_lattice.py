"""The arithmetic of code lattices (``base + k * step`` per channel) the ops' ``lattice`` rules
share (:mod:`edgebnn.graph.lattice` describes the lattices)."""

from __future__ import annotations

import math

import numpy as np

from ..node import Node


def gcd(values) -> int:
    return math.gcd(*(int(v) for v in values)) if len(values) else 0


def reduced(base: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    base = np.asarray(base, dtype=np.int64)
    step = np.asarray(step, dtype=np.int64)
    return np.where(step > 0, np.mod(base, np.where(step > 0, step, 1)), base), step


def weighted(node: Node, src: Node, a: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lattice of a dense or conv2d node's sum ``sum_j w_j x_j (+ b)`` for inputs on ``a + d Z``
    per input channel, on the accumulator's codes."""
    w = np.asarray(node.params["weight"], dtype=np.int64)
    w = w.reshape(-1, w.shape[-1])  # (kh*kw*C, F): the im2col feature j reads input channel j % C
    a, d = np.resize(a, w.shape[0]), np.resize(d, w.shape[0])
    padding = node.attrs.get("padding")  # a convolution's (a dense has none)
    if padding is not None and any(padding[0] + padding[1]):
        pad = int(node.attrs["pad_code"])  # windows at the border read the pad code instead
        d = np.array([gcd([di, pad - ai]) for ai, di in zip(a, d)], dtype=np.int64)
    wt = node.fixed_attr("weight_type")
    shifts = [src.type.lsb_exp + wt.lsb_exp - node.type.lsb_exp]
    if "bias" in node.params:
        shifts.append(node.fixed_attr("bias_type").lsb_exp - node.type.lsb_exp)
    if min(shifts) < 0:  # not an exact accumulator (export refuses it): assume every code
        return np.zeros(w.shape[1], dtype=np.int64), np.ones(w.shape[1], dtype=np.int64)
    p = 2 ** shifts[0]  # a product's code on the accumulator grid
    base = p * (a @ w)
    step = p * np.array([gcd(np.abs(w[:, f]) * d) for f in range(w.shape[1])], dtype=np.int64)
    if "bias" in node.params:
        q = 2 ** shifts[1]
        base = base + q * np.asarray(node.params["bias"], dtype=np.int64)
    return reduced(base, step)
