"""``sumpool1d`` in hls4ml: a ``Conv1D`` layer with identity weights between channels at every
window position, the 1-D form of sumpool2d's identity convolution (``sumpool2d.as_conv`` of the
node's one-row twin, ``graph/ops/_oned``, made a conv1d node again). hls4ml's pooling would
divide each sum by the window size, which rounds for a window that is not a power of two; the
identity convolution sums with nothing divided. Everything else (checks, layer entry, precisions,
post-flow check) is conv1d's, applied to :func:`as_conv`.
"""

from __future__ import annotations

import numpy as np

from ....graph import Node
from ....graph.ops._oned import as_2d, from_2d
from . import conv1d, sumpool2d
from .common import own_config_names as config_names

__all__ = [
    "ELEMENTWISE",
    "as_conv",
    "check",
    "config_names",
    "hls_class",
    "hls_layers",
    "layer",
    "precisions",
    "reuse_factor",
    "verify",
    "weight_matrix",
]

ELEMENTWISE = False


def as_conv(node: Node) -> Node:
    """The node as the conv1d node computing the same sums (identity weights (p, C, C), no padding)."""
    twin = sumpool2d.as_conv(as_2d(node))
    attrs = {"strides": list(node.attrs["strides"]), "padding": [0, 0]}
    return from_2d(twin, "conv1d", attrs, {**twin.params, "weight": twin.params["weight"][0]})


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows (conv1d's)."""
    return conv1d.hls_class(as_conv(node))


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """conv1d's refusals (an inexact accumulator)."""
    conv1d.check(as_conv(node), src, io_type, where)


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): the identity convolution."""
    return conv1d.layer(as_conv(node), src)


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: int<2> weights, the node's type as accumulator and result."""
    return conv1d.precisions(as_conv(node), src)


def reuse_factor(node: Node, backend, strategy: str, reuse_factor: int) -> int:
    """conv1d's reuse factor of the identity convolution."""
    return conv1d.reuse_factor(as_conv(node), backend, strategy, reuse_factor)


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check of the identity convolution: types, weights, bias and reuse factor."""
    return conv1d.verify(layer, as_conv(node), src, backend, reuse_factor)


def hls_layers(node: Node, src: Node, name: str, io_type: str, last: bool) -> list[tuple[str, str, Node]]:
    """The identity convolution's one hls4ml layer."""
    return conv1d.hls_layers(as_conv(node), src, name, io_type, last)


def weight_matrix(node: Node) -> tuple[int, int]:
    """The ``n_in x n_out`` weight matrix hls4ml builds for the node: its identity convolution's
    im2col (window x C rows, C filters)."""
    weight = as_conv(node).params["weight"]
    return int(np.prod(weight.shape[:-1])), int(weight.shape[-1])
