"""``sumpool2d`` in hls4ml: a ``Conv2D`` layer whose weights are the identity between channels at
every window position (kernel (ph, pw, C, C), weight 1 from channel c to filter c, 0 elsewhere),
strides the pool's, no padding, no bias, the node's type as accumulator and result.

hls4ml's pooling divides every window sum by the window size, which rounds for a size that is not
a power of two; the identity convolution is the same window sum with nothing divided (products by
the ``int<2>`` codes 0 and 1 are selections, and the tool removes the zeros of constant weights).
Everything else (checks, layer entry, precisions, post-flow check) is conv2d's, applied to
:func:`as_conv`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ....graph import Node
from . import conv2d
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
IDENTITY_TYPE = "int<2>"


def as_conv(node: Node) -> Node:
    """The node as the conv2d node computing the same sums (identity weights, no padding)."""
    ph, pw = node.attrs["pool"]
    c = int(node.shape[-1])
    weight = np.zeros((ph, pw, c, c), dtype=np.int64)
    weight[:, :, np.arange(c), np.arange(c)] = 1
    attrs = {"strides": list(node.attrs["strides"]), "padding": [[0, 0], [0, 0]], "pad_code": 0, "weight_type": IDENTITY_TYPE}
    return dataclasses.replace(node, op="conv2d", params={**node.params, "weight": weight}, attrs=attrs)


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows (conv2d's)."""
    return conv2d.hls_class(as_conv(node))


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """conv2d's refusals (an inexact accumulator; in io_stream a one-row window with a row stride)."""
    conv2d.check(as_conv(node), src, io_type, where)


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): the identity convolution."""
    return conv2d.layer(as_conv(node), src)


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: int<2> weights, the node's type as accumulator and result."""
    return conv2d.precisions(as_conv(node), src)


def reuse_factor(node: Node, backend, strategy: str, reuse_factor: int) -> int:
    """conv2d's reuse factor of the identity convolution."""
    return conv2d.reuse_factor(as_conv(node), backend, strategy, reuse_factor)


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check of the identity convolution: types, weights, bias and reuse factor."""
    return conv2d.verify(layer, as_conv(node), src, backend, reuse_factor)


def hls_layers(node: Node, src: Node, name: str, io_type: str, last: bool) -> list[tuple[str, str, Node]]:
    """The identity convolution's one hls4ml layer."""
    return conv2d.hls_layers(as_conv(node), src, name, io_type, last)


def weight_matrix(node: Node) -> tuple[int, int]:
    """The ``n_in x n_out`` weight matrix hls4ml builds for the node: its identity convolution's
    im2col (window x C rows, C filters)."""
    weight = as_conv(node).params["weight"]
    return int(np.prod(weight.shape[:-1])), int(weight.shape[-1])
