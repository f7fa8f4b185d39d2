"""``maxpool2d`` in hls4ml: a ``Pooling2D`` layer (class ``MaxPooling2D``, as its Keras converters
emit; valid padding, no pad amounts) whose accumulator and result types are the node's type (the
input's): a maximum of values on one grid needs no rounding. Strides other than the pool size
make it edgebnn's ``EdgebnnPool2D`` (``_pooling``), in both io types."""

from __future__ import annotations

from ....graph import Node
from ._pooling import pool2d_class, pooling_layer, verify_pooling
from .common import own_config_names as config_names
from .common import own_hls_layer, precision
from .common import same_reuse_factor as reuse_factor

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows (``EdgebnnPool2D`` for strides other than the pool)."""
    return pool2d_class(node)


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Nothing to refuse: any window and strides, in both io types."""


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): a ``Pooling2D`` of class MaxPooling2D."""
    return pooling_layer(node, src, "Max")


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: the node's type as accumulator and result."""
    return {"accum": precision(node.type), "result": precision(node.type)}


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: the accumulator type, and that the layer still takes the maximum."""
    return verify_pooling(layer, backend, precisions(node, src)["accum"], "Max")


hls_layers = own_hls_layer(hls_class)
