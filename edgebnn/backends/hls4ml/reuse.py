"""Reuse factors hls4ml builds exactly as given, and the refusal of any other, before anything is written.

The Latency strategy takes any reuse factor >= 1 (it only limits how many multipliers are
shared). The Resource strategy keeps a reuse factor only when it is valid for the layer's
weight matrix (``n_in x n_out``: a dense layer's, or a convolution's im2col ``kh*kw*C x F``):
hls4ml 1.3.0 snaps any other to the nearest valid one with only a printed warning
(:func:`~edgebnn.backends.hls4ml.cost.blocks.valid_reuse_factors` is its rule), and its
io_parallel Resource convolutions (``conv_1d_resource_cl``, ``conv_2d_resource_cl``; also the
conv2d of a depthwise node's full kernel and the identity convolution of a sum pool) assert
``rf <= k*C``, which aborts the process running the C-simulation. Each refusal names the node and lists the
reuse factors that work there.

Imports no hls4ml, TensorFlow or Keras: the run checks a Keras model's layers with it before
training (:func:`matrices_of_model`), export a graph's nodes (:func:`matrices`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..target import Target, TargetError
from .cost.blocks import valid_reuse_factors

# ops hls4ml builds as a convolution (a depthwise node as the conv2d of its full kernel, a sum
# pool as the identity convolution): its io_parallel Resource kernel (conv_1d_resource_cl,
# conv_2d_resource_cl) asserts rf <= the rows of the im2col matrix
CONVOLUTIONS = ("conv1d", "conv2d", "depthwise_conv2d", "sumpool1d", "sumpool2d")


def allowed(op: str, n_in: int, n_out: int, strategy: str, io_type: str) -> list[int] | None:
    """The reuse factors hls4ml builds as given for an ``op`` node with an ``n_in x n_out``
    weight matrix, ascending; None when any reuse factor >= 1 is (the Latency strategy)."""
    if strategy != "Resource":
        return None
    valid = valid_reuse_factors(n_in, n_out)
    if op in CONVOLUTIONS and io_type == "io_parallel":
        valid = [rf for rf in valid if rf <= n_in]  # conv_{1,2}d_resource_cl assert rf <= kernel size * C
    return valid


def matrices(graph) -> dict[str, tuple[str, int, int]]:
    """Each node of ``graph`` that hls4ml builds with a weight matrix -> (op, n_in, n_out) of
    that matrix (a convolution's im2col ``k*C x F``)."""
    from .ops import LOWERINGS

    out = {}
    for node in graph.nodes:
        form = getattr(LOWERINGS.get(node.op), "weight_matrix", None)  # an op built on another's matrix
        if form is not None:
            out[node.name] = (node.op, *form(node))
        elif "weight" in node.params:
            out[node.name] = (node.op, *_matrix(node.params["weight"].shape))
    return out


def matrices_of_model(model) -> dict[str, tuple[str, int, int]]:
    """Each weighted layer of a built Keras ``model`` -> (op, n_in, n_out), under the names its
    graph nodes will have (a separable layer's depthwise node is ``<layer>_depthwise``)."""
    out = {}
    for layer in model.layers:
        pointwise = getattr(layer, "pointwise_kernel", None)
        kernel = getattr(layer, "depthwise_kernel" if pointwise is not None else "kernel", None)
        if kernel is None:
            continue
        shape = tuple(int(d) for d in kernel.shape)
        if pointwise is not None or hasattr(layer, "depth_multiplier"):  # a depthwise (kh, kw, C, M) kernel
            name = f"{layer.name}_depthwise" if pointwise is not None else layer.name
            out[name] = ("depthwise_conv2d", int(np.prod(shape[:-1])), shape[-2] * shape[-1])
            if pointwise is not None:
                out[layer.name] = ("conv2d", *_matrix(tuple(int(d) for d in pointwise.shape)))
        else:
            out[layer.name] = ({4: "conv2d", 3: "conv1d"}.get(len(shape), "dense"), *_matrix(shape))
    return out


def _matrix(shape) -> tuple[int, int]:
    return int(np.prod(shape[:-1])), int(shape[-1])


def check(target: Target, weighted: Mapping[str, tuple[str, int, int]], graph_name: str) -> dict[str, int]:
    """The reuse factor of each weighted node (``weighted``: name -> (op, n_in, n_out), see
    :func:`matrices`), or a TargetError naming a node whose reuse factor hls4ml would not build
    as given, with the ones it builds there."""
    rfs = target.reuse_factors_of(list(weighted), graph_name)
    for name, rf in rfs.items():
        op, n_in, n_out = weighted[name]
        valid = allowed(op, n_in, n_out, target.strategy, target.io_type)
        if valid is not None and rf not in valid:
            layout = " in io_parallel" if op in CONVOLUTIONS and target.io_type == "io_parallel" else ""
            raise TargetError(
                f"reuse factor {rf} of node {name!r} ({op}, {n_in} x {n_out} weights) is not one hls4ml's Resource "
                f"strategy{layout} builds as given; use one of {', '.join(map(str, valid))} there, or the Latency strategy"
            )
    return rfs
