"""``avgpool1d`` in hls4ml: a ``Pooling1D`` layer (class ``AveragePooling1D``, as its Keras
converters emit; valid padding) that sums each window in its accumulator type and divides by the
window size ``p = 2**k``, configured as avgpool2d configures its 2-D twin (``avgpool2d.accumulator``:
the node's grid with ``k`` more integer bits, so nothing rounds). Any stride, in both io types
(``_pooling``: the line-buffer implementation). A global average
is a pool over the whole length followed by a flatten node."""

from __future__ import annotations

from ....graph import Node
from ....graph.ops._oned import as_2d
from . import avgpool2d
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
    """The layer-list fields (besides name and inputs): a ``Pooling1D`` of class AveragePooling1D."""
    return pool1d_layer(node, src, "Average")


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions, those of its 2-D twin: the exact window-sum accumulator, the node's type as result."""
    return avgpool2d.precisions(as_2d(node), src)


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: the accumulator type, and that the layer still averages."""
    return verify_pooling(layer, backend, precisions(node, src)["accum"], "Average")


hls_layers = own_hls_layer(hls_class)
