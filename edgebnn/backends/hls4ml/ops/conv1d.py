"""``conv1d`` in hls4ml: a ``Conv1D`` layer (channels last, weights in Keras layout (k, C, F)) with
types as for dense and the graph's explicit padding as pad_left/right.

It is the conv2d of one row (``graph/ops/_oned``), so it is refused and configured as that twin
(``conv2d.check``: a non-zero ``pad_code``, an inexact accumulator; ``conv2d.reuse_factor``: a
kernel of one tap is snapped in the Resource strategy). hls4ml runs a one-tap kernel as a
``PointwiseConv1D`` (same weights and types) and in io_stream moves the padding into a
``ZeroPadding1D`` layer of the input's type. A dilated kernel arrives with zero taps (freeze
writes it so), which hls4ml's Conv1D, without dilation, computes as it is.
"""

from __future__ import annotations

import dataclasses

from ....graph import Node
from ....graph.ops._oned import as_2d, row
from . import conv2d
from .common import bias_values, verify_weighted, weight_values, weighted_precisions
from .common import own_config_names as config_names

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows: ``PointwiseConv1D`` for a one-tap kernel."""
    return "PointwiseConv1D" if node.params["weight"].shape[0] == 1 else "Conv1D"


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Refuse what conv2d refuses of the node's one-row twin (a non-zero padding value, an
    inexact accumulator)."""
    # the twin keeps the node's op, which the accumulator refusal names
    conv2d.check(dataclasses.replace(as_2d(node), op=node.op), row(src), io_type, where)


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): shapes, stride, padding, weights and bias as values."""
    k, c, f = (int(d) for d in node.params["weight"].shape)
    left, right = node.attrs["padding"]
    return dict(
        class_name="Conv1D",
        data_format="channels_last",
        in_width=int(src.shape[0]),
        n_chan=c,
        out_width=int(node.shape[0]),
        n_filt=f,
        filt_width=k,
        stride_width=int(node.attrs["strides"][0]),
        pad_left=int(left),
        pad_right=int(right),
        weight_data=weight_values(node),
        bias_data=bias_values(node),
    )


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: weight and bias types, the node's type as accumulator and result."""
    return weighted_precisions(node)


def reuse_factor(node: Node, backend, strategy: str, reuse_factor: int) -> int:
    """The reuse factor the layer is configured with, as for its one-row twin (``conv2d.reuse_factor``)."""
    return conv2d.reuse_factor(as_2d(node), backend, strategy, reuse_factor)


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: types, weights, bias and reuse factor (see ``common.verify_weighted``)."""
    return verify_weighted(layer, node, precisions(node, src), backend, reuse_factor)


def hls_layers(node: Node, src: Node, name: str, io_type: str, last: bool) -> list[tuple[str, str, Node]]:
    """The node's hls4ml layers after the flows, as (name, class, node whose type the result has):
    in io_stream a padded convolution is preceded by a ``ZeroPadding1D`` layer."""
    layers = []
    if io_type == "io_stream" and any(node.attrs["padding"]):
        # io_stream pads in a ZeroPadding1D layer of the input's type: zeros are exact in any type
        layers.append((f"zp1d_{name}", "ZeroPadding1D", src))
    layers.append((name, hls_class(node), node))
    return layers
