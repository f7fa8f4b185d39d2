"""``avgpool2d`` in hls4ml: a ``Pooling2D`` layer (class ``AveragePooling2D``, as its Keras
converters emit; valid padding) that sums each window in its accumulator type and divides the
sum by the window size ``N = 2**k`` (``nnet::avg`` in io_parallel, ``reduce_pool`` in
io_stream).

The graph's type holds the exact means (the input grid ``2**k`` times finer), so the accumulator
gets that grid and ``k`` more integer bits, wide enough for any window sum: hls4ml's ap_fixed
division by an integer keeps the dividend's fraction bits, and ``sum / N`` lies on that grid, so
nothing rounds; the result type is the node's. Strides other than the pool size make it
edgebnn's ``EdgebnnPool2D`` (``_pooling``: the same sum and division), in both io types."""

from __future__ import annotations

from ....fixed import FixedType
from ....graph import Node
from ._pooling import pool2d_class, pooling_layer, verify_pooling
from .common import own_config_names as config_names
from .common import own_hls_layer, precision
from .common import same_reuse_factor as reuse_factor

__all__ = [
    "ELEMENTWISE",
    "accumulator",
    "check",
    "config_names",
    "hls_class",
    "hls_layers",
    "layer",
    "precisions",
    "reuse_factor",
    "verify",
]

ELEMENTWISE = False


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows (``EdgebnnPool2D`` for strides other than the pool)."""
    return pool2d_class(node)


def accumulator(node: Node) -> FixedType:
    """The window sum's type: the node's grid with ``k`` more integer bits (``N = 2**k``)."""
    k = (node.attrs["pool"][0] * node.attrs["pool"][1]).bit_length() - 1
    return node.type.replace(
        width=node.type.width + k, integer=node.type.integer + k, rounding="TRN", overflow="WRAP", sat_bits=0
    )


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Nothing to refuse: any window and strides, in both io types."""


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): a ``Pooling2D`` of class AveragePooling2D."""
    return pooling_layer(node, src, "Average")


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: the exact window-sum accumulator, and the node's type as result."""
    return {"accum": precision(accumulator(node)), "result": precision(node.type)}


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: the accumulator type, and that the layer still averages."""
    return verify_pooling(layer, backend, precisions(node, src)["accum"], "Average")


hls_layers = own_hls_layer(hls_class)
