"""``zeropad1d`` in hls4ml: of the code 0, a ``ZeroPadding1D`` layer (channels last) whose result
type is the node's (the input's): a zero is exact in any type, so nothing rounds. Of another
code (a ``QuantConv1D``'s ``pad_values``), edgebnn's ``EdgebnnPad1D`` layer (``pad_layer``): the
``EdgebnnPad2D`` layer of the node's one-row twin (``pad2d``, ``graph/ops/_oned``) with an (L, C)
result, since hls4ml's ZeroPadding1D pads zeros only."""

from __future__ import annotations

from ....graph import Node
from ....graph.ops._oned import as_2d, row
from . import pad2d
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

PAD_CLASS = "EdgebnnPad1D"
ELEMENTWISE = False


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows: edgebnn's padding layer for a non-zero code."""
    return PAD_CLASS if int(node.attrs["pad_code"]) != 0 else "ZeroPadding1D"


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Nothing to refuse: either layer pads with a value of the input's type."""


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): shapes and padding amounts (and the value)."""
    if hls_class(node) == PAD_CLASS:
        return dict(pad2d.layer(as_2d(node), row(src)), class_name=PAD_CLASS)
    left, right = node.attrs["padding"]
    return dict(
        class_name="ZeroPadding1D",
        data_format="channels_last",
        in_width=int(src.shape[0]),
        n_chan=int(src.shape[1]),
        out_width=int(node.shape[0]),
        pad_left=int(left),
        pad_right=int(right),
    )


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: its result is the node's type."""
    return {"result": precision(node.type)}


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Nothing to check beyond the result type (checked for every layer)."""
    return []


hls_layers = own_hls_layer(hls_class)
