"""Exact NumPy execution of a deployment graph.

Tensors travel as integer codes on their node's fixed-point type. Products and sums are
computed on codes, in float64 through BLAS when interval analysis shows every partial sum stays
below 2**53 (then float64 is exact), otherwise in int64.
"""

from __future__ import annotations

import numpy as np

from .graph import Graph, Node

_EXACT_FLOAT64 = 2.0**53


def emulate(graph: Graph, x, return_all: bool = False):
    """Run ``graph`` on float inputs ``x`` (batch first); returns float64 outputs.

    With ``return_all=True`` returns a dict of every node's output values, by node name.
    """
    x = np.asarray(x, dtype=np.float64)
    inp = graph.input
    if x.shape[1:] != tuple(inp.shape):
        raise ValueError(
            f"input has shape {x.shape[1:]} per sample but graph {graph.name!r} expects {tuple(inp.shape)}"
        )
    codes: dict[str, np.ndarray] = {}
    for node in graph.nodes:
        if node.op == "input":
            codes[node.name] = node.type.codes(x)
        else:
            src = graph[node.inputs[0]]
            codes[node.name] = _OPS[node.op](node, src, codes[src.name])
    if return_all:
        return {n.name: n.type.from_codes(codes[n.name]) for n in graph.nodes}
    return graph.output.type.from_codes(codes[graph.output.name])


def _dense(node: Node, src: Node, x: np.ndarray) -> np.ndarray:
    return _weighted_sum(node, src, x, node.params["weight"])


def _conv2d(node: Node, src: Node, x: np.ndarray) -> np.ndarray:
    """Cross-correlation as Keras computes it: im2col over (kh, kw, C), then the weighted sum."""
    w = node.params["weight"]  # (kh, kw, C, F)
    kh, kw, c, f = w.shape
    (pt, pb), (pl, pr) = node.attrs["padding"]
    sh, sw = node.attrs["strides"]
    x = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=int(node.attrs["pad_code"]))
    win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))[:, ::sh, ::sw]  # N,Ho,Wo,C,kh,kw
    cols = win.transpose(0, 1, 2, 4, 5, 3).reshape(*win.shape[:3], kh * kw * c)
    return _weighted_sum(node, src, cols, w.reshape(kh * kw * c, f))


def _weighted_sum(node: Node, src: Node, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w (+ bias)`` on integer codes, exactly, cast to the node's accumulator type."""
    wt = node.fixed_attr("weight_type")
    # codes of the product live on the grid lsb(src) * lsb(weight)
    prod_lsb_exp = src.type.lsb_exp + wt.lsb_exp
    bound = float(np.abs(x).max(initial=0)) * float(np.abs(w).sum(axis=0).max(initial=0))
    if bound < _EXACT_FLOAT64:
        acc = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.int64)
    else:
        acc = x.astype(np.int64) @ w.astype(np.int64)
    if "bias" in node.params:
        bt = node.fixed_attr("bias_type")
        shift = bt.lsb_exp - prod_lsb_exp
        bias = node.params["bias"].astype(np.int64)
        if shift >= 0:
            acc = acc + (bias << shift)
        else:  # bias finer than the products: move the sum onto the bias grid
            acc = (acc << -shift) + bias
            prod_lsb_exp = bt.lsb_exp
    return node.type.cast_codes(acc, prod_lsb_exp)


def _maxpool2d(node: Node, src: Node, x: np.ndarray) -> np.ndarray:
    (ph, pw), (sh, sw) = node.attrs["pool"], node.attrs["strides"]
    win = np.lib.stride_tricks.sliding_window_view(x, (ph, pw), axis=(1, 2))[:, ::sh, ::sw]
    return win.max(axis=(-2, -1))[:, : node.shape[0], : node.shape[1]]


def _flatten(node: Node, src: Node, x: np.ndarray) -> np.ndarray:
    return x.reshape(len(x), -1)


def _threshold(node: Node, src: Node, x: np.ndarray) -> np.ndarray:
    t = node.params["thresholds"]
    levels = node.params["levels"]
    c = t.shape[0]
    flat = x.reshape(-1, c)
    counts = np.zeros(flat.shape, dtype=np.int64)
    for k in range(t.shape[1]):
        counts += flat >= t[:, k]
    out = np.take_along_axis(levels.T, counts, axis=0) if flat.shape[0] else counts
    return out.reshape(x.shape).astype(np.int64)


def _cast(node: Node, src: Node, x: np.ndarray) -> np.ndarray:
    if node.attrs["relu"]:
        x = np.maximum(x, 0)
    return node.type.cast_codes(x, src.type.lsb_exp)


_OPS = {"dense": _dense, "conv2d": _conv2d, "maxpool2d": _maxpool2d, "flatten": _flatten, "threshold": _threshold, "cast": _cast}
