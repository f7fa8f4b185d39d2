"""Whether Keras's float32 arithmetic computes every accumulator, every mean and every sum of a
merge exactly (``graph.meta["keras_float32_exact"]``)."""

from __future__ import annotations

import math

import numpy as np

from ...graph.ops.depthwise_conv2d import as_conv2d


def inexact(nodes: list, float64_sums=()) -> list[str]:
    """The dense and conv nodes whose accumulators (a separable layer's intermediate depthwise
    result among them), the average pool nodes whose window sums and the add nodes whose sums
    float32 may round; the accumulators named in ``float64_sums`` (summed in float64 by a layer
    that ``sums_exactly``, then rounded once, which freeze models) those that float64 may round."""
    return [n.name for n in nodes if n.op in CHECKS and not CHECKS[n.op](n, nodes, n.name in float64_sums)]


def float32_exact(node, nodes: list, float64: bool = False) -> bool:
    """Every partial sum of the dense (or conv2d / conv1d: per window) node's products is an integer
    multiple of its grid below 2**24 in magnitude (2**53 when Keras sums in ``float64``), so
    float32 (float64) accumulates it without rounding, in any order. A conv2d window may hold
    the padding value."""
    return sum_bound(node, nodes) < (2.0**53 if float64 else 2.0**24)


def sum_bound(node, nodes: list) -> float:
    """The largest magnitude of any partial sum of the dense, conv2d or conv1d node's products
    (with its bias), in units of the node's grid: the integers Keras's float arithmetic must hold."""
    src = next(n for n in nodes if n.name == node.inputs[0])
    x_max = np.maximum(np.abs(src.lo), np.abs(src.hi))
    weight = node.params["weight"]
    if node.op in ("conv2d", "conv1d"):
        *kernel, c, f = weight.shape
        if np.any(node.attrs["padding"]):
            x_max = np.maximum(x_max, abs(float(src.type.from_codes(node.attrs["pad_code"]))))
        x_max = np.tile(np.broadcast_to(x_max, (c,)), int(np.prod(kernel)))
        weight = weight.reshape(-1, f)
    x_max = np.broadcast_to(x_max, (weight.shape[0],)) if x_max.size == 1 else x_max
    w = node.fixed_attr("weight_type").from_codes(np.abs(weight))
    bound = float((x_max @ w).max(initial=0.0))
    if "bias" in node.params:
        bound += float(np.abs(node.fixed_attr("bias_type").from_codes(node.params["bias"])).max(initial=0.0))
    return math.ldexp(bound, -node.type.lsb_exp)


def unreplayed_roundings(nodes: list, float64_sums) -> list:
    """The accumulators of ``float64_sums`` that Keras rounds to float32 (their sums may need
    more than 24 significant bits; a separable layer's intermediate, read by its pointwise sum,
    is not rounded) and that are not read by threshold nodes alone, which replay that rounding:
    an end of the graph, a pool, a merge."""
    out = []
    for n in nodes:
        if n.name not in float64_sums or CHECKS[n.op](n, nodes):
            continue
        readers = [r for r in nodes if n.name in r.inputs]
        if any(r.name in float64_sums for r in readers):  # a separable layer's intermediate
            continue
        if n is nodes[-1] or any(r.op != "threshold" for r in readers):
            out.append(n)
    return out


def depthwise_exact(node, nodes: list, float64: bool = False) -> bool:
    """:func:`float32_exact` of the depthwise_conv2d node as the conv2d of its full kernel (the
    zeros outside each channel's block add nothing to the bound)."""
    return float32_exact(as_conv2d(node), nodes, float64)


def mean_exact(node, nodes: list, float64: bool = False) -> bool:
    """Every partial window sum of the avgpool2d node is an integer multiple of its input's grid
    below 2**24 in magnitude (at most the window size times the largest input, which on the
    node's finer grid is its largest code), so float32 sums without rounding and the division
    by the power-of-two window size is exact. For a sumpool2d or sumpool1d node the same bound is its largest
    code on the input's grid: Keras's float32 window sum is then the node's sum in any order."""
    bound = float(np.maximum(np.abs(node.lo), np.abs(node.hi)).max(initial=0.0))
    return math.ldexp(bound, -node.type.lsb_exp) < 2.0**24


def sum_exact(node, nodes: list, float64: bool = False) -> bool:
    """Every partial sum of the add node's inputs (Keras adds them in order, in float32) is an
    integer multiple of the node's grid below 2**24 in magnitude."""
    srcs = [next(n for n in nodes if n.name == name) for name in node.inputs]
    bound = float(sum(np.maximum(np.abs(s.lo), np.abs(s.hi)) for s in srcs).max(initial=0.0))
    return math.ldexp(bound, -node.type.lsb_exp) < 2.0**24


CHECKS = {
    "dense": float32_exact,
    "conv2d": float32_exact,
    "avgpool2d": mean_exact,
    "depthwise_conv2d": depthwise_exact,
    "conv1d": float32_exact,
    "avgpool1d": mean_exact,
    "add": sum_exact,
    "sumpool2d": mean_exact,
    "sumpool1d": mean_exact,
}
