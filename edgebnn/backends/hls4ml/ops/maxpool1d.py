"""``maxpool1d`` in hls4ml: a ``Pooling1D`` layer (class ``MaxPooling1D``, as its Keras converters
emit; valid padding) configured as maxpool2d configures its 2-D twin: the node's type (the
input's) as accumulator and result. Any stride, in both io types (``_pooling``: the
line-buffer implementation). A global max pool is a pool over the whole length
followed by a flatten node."""

from __future__ import annotations

from ....graph import Node
from . import maxpool2d
from ._pooling import pool1d_class, pool1d_layer, verify_pooling
from .common import own_config_names as config_names
from .common import own_hls_layer
from .common import same_reuse_factor as reuse_factor

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows: ``GlobalPooling1D`` for a global pool
    (``_pooling.is_global1d``), else ``Pooling1D``."""
    return pool1d_class(node)


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Nothing to refuse: any window and strides, in both io types."""


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): a ``Pooling1D`` of class MaxPooling1D."""
    return pool1d_layer(node, src, "Max")


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: the node's type as accumulator and result (as maxpool2d)."""
    return maxpool2d.precisions(node, src)


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: the accumulator type, and that the layer still takes the maximum."""
    return verify_pooling(layer, backend, precisions(node, src)["accum"], "Max")


hls_layers = own_hls_layer(hls_class)
