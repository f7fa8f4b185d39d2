"""``input`` in hls4ml: an ``Input`` layer whose type is the graph's input type, so the bridge's
float to ``ap_fixed`` conversion *is* the input quantization (rounding and overflow mode)."""

from __future__ import annotations

from ....graph import Node
from .common import own_config_names as config_names
from .common import own_hls_layer, precision
from .common import same_reuse_factor as reuse_factor

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows."""
    return "Input"


def check(node: Node, src: Node | None, io_type: str, where: str) -> None:
    """Nothing to refuse: hls4ml converts the input in its type's own modes."""


def layer(node: Node, src: Node | None) -> dict:
    """The layer-list fields (besides name and inputs): a Keras ``InputLayer`` of the node's shape."""
    return {"class_name": "InputLayer", "input_shape": list(node.shape)}


def precisions(node: Node, src: Node | None) -> dict[str, str]:
    """The layer's precisions: its result is the graph's input type."""
    return {"result": precision(node.type)}


def verify(layer, node: Node, src: Node | None, backend, reuse_factor: int) -> list[str]:
    """Nothing to check beyond the result type (checked for every layer)."""
    return []


hls_layers = own_hls_layer(hls_class)
