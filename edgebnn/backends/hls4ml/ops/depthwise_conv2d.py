"""``depthwise_conv2d`` in hls4ml: built as hls4ml's ``Conv2D`` of the node's full kernel
(``graph.ops.depthwise_conv2d.full_kernel``: each output channel's weights in its input
channel's block, zeros elsewhere), which computes the same sums exactly; everything else is the
conv2d lowering (padding, types, reuse factor, the post-flow check of every weight).

hls4ml 1.3.0's own ``DepthwiseConv2D`` supports a depth multiplier of 1 only (its C++ asserts
``n_filt == n_chan`` in io_parallel and io_stream) and no Resource strategy in io_parallel
(``depthwise_conv_2d_cl`` asserts), so one form for every depth multiplier, io type and
strategy is the conv2d. With constant weights (the Latency strategy) the zero products are
constants HLS removes; under the Resource strategy they are stored and multiplied, which the
cost model counts (``cost/depthwise_conv2d.py``).
"""

from __future__ import annotations

from ....graph import Node
from ....graph.ops.depthwise_conv2d import as_conv2d
from . import conv2d

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False
config_names = conv2d.config_names


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows: that of the conv2d of the full kernel."""
    return conv2d.hls_class(as_conv2d(node))


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """The conv2d refusals (a non-zero padding value, an inexact accumulator, a one-row kernel
    with a row stride in io_stream)."""
    conv2d.check(as_conv2d(node), src, io_type, where)


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields of the conv2d of the full kernel."""
    return conv2d.layer(as_conv2d(node), src)


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The conv2d's precisions: weight and bias types, the node's type as accumulator and result."""
    return conv2d.precisions(as_conv2d(node), src)


def reuse_factor(node: Node, backend, strategy: str, reuse_factor: int) -> int:
    """The reuse factor of the conv2d of the full kernel."""
    return conv2d.reuse_factor(as_conv2d(node), backend, strategy, reuse_factor)


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check of the conv2d: types, every weight of the full kernel, bias, reuse factor."""
    return conv2d.verify(layer, as_conv2d(node), src, backend, reuse_factor)


def hls_layers(node: Node, src: Node, name: str, io_type: str, last: bool) -> list[tuple[str, str, Node]]:
    """The conv2d's hls4ml layers (a ``ZeroPadding2D`` before a padded one in io_stream)."""
    return conv2d.hls_layers(as_conv2d(node), src, name, io_type, last)


def weight_matrix(node: Node) -> tuple[int, int]:
    """The ``n_in x n_out`` weight matrix hls4ml builds for the node: the im2col of the conv2d
    of its full ``(kh, kw, C, C*M)`` kernel."""
    kh, kw, c, m = node.params["weight"].shape
    return int(kh * kw * c), int(c * m)
