"""``flatten`` in hls4ml: a ``Reshape`` layer to one axis (what its Keras converter emits for
``Flatten``): a no-op in io_parallel (dropped when it is the last layer) and in io_stream (the
next layer reads the pixels' packets; as the last layer hls4ml repacks it, ``Repack``). Only a
dense layer reads those packets right, so in io_stream the thresholds and casts right after a
flatten run before it (see ``model.hls_chain``)."""

from __future__ import annotations

from ....graph import Node
from .common import own_config_names, precision
from .common import same_reuse_factor as reuse_factor

__all__ = ["ELEMENTWISE", "check", "config_names", "hls_class", "hls_layers", "layer", "precisions", "reuse_factor", "verify"]

ELEMENTWISE = False


def _repack(name: str) -> str:
    return f"repack_{name}"


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows (unless it is the last layer: see :func:`hls_layers`)."""
    return "Reshape"


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Nothing to refuse: a flatten moves no value."""


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): a reshape to the node's one axis."""
    return dict(class_name="Reshape", target_shape=[int(node.shape[0])])


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: its result is the node's type (its input's)."""
    return {"result": precision(node.type)}


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Nothing to check beyond the result type (checked for every layer)."""
    return []


def hls_layers(node: Node, src: Node, name: str, io_type: str, last: bool) -> list[tuple[str, str, Node]]:
    """The node's hls4ml layers after the flows, as (name, class, node whose type the result has):
    as the last layer io_parallel drops it (a no-op on flat arrays) and io_stream repacks the
    stream into one packet."""
    if not last:
        return [(name, hls_class(node), node)]
    if io_type == "io_stream":
        return [(_repack(name), "Repack", node)]
    return []


def config_names(name: str, last: bool) -> list[str]:
    """The names the node's configuration is given under: as the last layer also the name of the
    ``Repack`` layer io_stream replaces it with."""
    return own_config_names(name, last) + ([_repack(name)] if last else [])
