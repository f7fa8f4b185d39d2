"""``pad2d`` in hls4ml: edgebnn's own ``EdgebnnPad2D`` layer (``hls_templates/nnet_edgebnn_pad.h``,
registered by ``pad_layer``): hls4ml's ZeroPadding2D pads zeros only, this one pads the node's
value (a code of its type, written as the exact decimal of that value) in io_parallel and
io_stream; the result type is the node's (its input's)."""

from __future__ import annotations

import numpy as np

from ....graph import Node
from .common import own_config_names as config_names
from .common import own_hls_layer, precision
from .common import same_reuse_factor as reuse_factor

__all__ = [
    "ELEMENTWISE",
    "PAD_CLASS",
    "check",
    "config_names",
    "hls_class",
    "hls_layers",
    "layer",
    "precisions",
    "reuse_factor",
    "verify",
]

PAD_CLASS = "EdgebnnPad2D"
ELEMENTWISE = False


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows."""
    return PAD_CLASS


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Nothing to refuse: the layer copies and writes values of one type."""


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): shapes, the top and left amounts, the value."""
    (pt, _), (pl, _) = node.attrs["padding"]
    value = float(node.type.from_codes(np.array([int(node.attrs["pad_code"])]))[0])
    return dict(
        class_name=PAD_CLASS,
        n_chan=int(node.shape[2]),
        in_height=int(src.shape[0]),
        in_width=int(src.shape[1]),
        out_height=int(node.shape[0]),
        out_width=int(node.shape[1]),
        pad_top=int(pt),
        pad_left=int(pl),
        pad_value=repr(value),  # a double that is the value exactly (on a grid of at most 53 bits)
    )


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: its result is the node's type."""
    return {"result": precision(node.type)}


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Nothing to check beyond the result type (checked for every layer)."""
    return []


hls_layers = own_hls_layer(hls_class)
