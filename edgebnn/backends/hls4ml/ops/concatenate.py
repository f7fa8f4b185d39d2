"""``concatenate`` in hls4ml: a ``Concatenate`` layer along the last axis
(``nnet::concatenate1d`` / ``concatenate3d`` with axis -1): each value is assigned to the
node's type, which holds every input's values on the finest input grid, so nothing rounds.
io_stream joins each pixel's two packets into one. A concatenation of more inputs is a chain of
them whose partial concatenations have the node's type (``_merge.merge_steps``)."""

from __future__ import annotations

from ....graph import Node
from ._merge import check_inputs as check
from ._merge import precisions, verify
from .common import own_config_names as config_names
from .common import own_hls_layer
from .common import same_reuse_factor as reuse_factor

__all__ = [
    "ELEMENTWISE",
    "MULTI_INPUT",
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
MULTI_INPUT = True  # src is the list of the nodes it reads


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows."""
    return "Concatenate"


def layer(node: Node, srcs: list[Node]) -> dict:
    """The layer-list fields (besides name and inputs): a ``Concatenate`` of the node's rank on the last axis."""
    return dict(class_name="Concatenate", op=f"concatenate{len(node.shape)}d", axis=-1)


hls_layers = own_hls_layer(hls_class)
