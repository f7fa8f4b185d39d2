"""``maxpool2d`` in hls4ml: a ``Pooling2D`` layer (class ``MaxPooling2D``, as its Keras converters
emit; valid padding, no pad amounts) whose accumulator and result types are the node's type (the
input's): a maximum of values on one grid needs no rounding. io_stream hls4ml pools only
non-overlapping windows (stride = pool size); other strides are refused there."""

from __future__ import annotations

from ....graph import Node
from ._pooling import check_stream_windows, pooling_layer, verify_pooling
from .common import own_config_names as config_names
from .common import own_hls_layer, precision
from .common import same_reuse_factor as reuse_factor

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows."""
    return "Pooling2D"


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Refuse overlapping or gapped windows (strides other than the pool size) in io_stream."""
    check_stream_windows(node, io_type, where)


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): a ``Pooling2D`` of class MaxPooling2D."""
    return pooling_layer(node, src, "MaxPooling2D")


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: the node's type as accumulator and result."""
    return {"accum": precision(node.type), "result": precision(node.type)}


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: the accumulator type, and that the layer still takes the maximum."""
    return verify_pooling(layer, backend, precisions(node, src)["accum"], "Max")


hls_layers = own_hls_layer(hls_class)
