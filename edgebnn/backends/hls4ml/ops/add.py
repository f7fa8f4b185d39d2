"""``add`` in hls4ml: a ``Merge`` layer with op ``add`` (``nnet::add``, elementwise
``res = data1 + data2``): ap_fixed's sum of the two input types is exact and the result type is
the node's, which holds every sum, so nothing rounds. Two inputs of one shape (io_stream
packets of one pixel's channels on both); an add of more inputs is a chain of them whose partial
sums have their exact types (``_merge.merge_steps``)."""

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
    return "Merge"


def layer(node: Node, srcs: list[Node]) -> dict:
    """The layer-list fields (besides name and inputs): a ``Merge`` with op ``add``."""
    return dict(class_name="Merge", op="add")


hls_layers = own_hls_layer(hls_class)
