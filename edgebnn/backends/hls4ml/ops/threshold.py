"""``threshold`` in hls4ml: edgebnn's own ``EdgebnnThreshold`` layer
(``hls_templates/nnet_edgebnn_threshold.h``, registered by ``threshold_layer``): levels in the
output type; an array and an hls::stream version, one channel index per flat element either way.

The compare runs in :func:`compare_type`: the input's type without the ``s`` low bits every
reachable input shares with its channel's thresholds (the node's lattice,
``graph.ops.threshold.compare_shift``; ``s = 0`` without one). The input is converted to it by
truncation (floor) and the thresholds are held as ``floor(t / 2**s)``: for inputs and thresholds
on one lattice of step ``2**s * m`` that keeps every comparison's result, in fewer bits.

From :data:`SEARCH_FROM` thresholds per channel on, the layer finds the count by a binary search
over the ascending thresholds (:func:`search_steps` compares) instead of one comparator each, so
a k-bit output costs about k compares rather than ``2**k - 1``."""

from __future__ import annotations

import numpy as np

from ....fixed import FixedType
from ....graph import Node
from ....graph.ops.threshold import compare_shift
from .common import expect_precision, own_hls_layer, precision
from .common import own_config_names as config_names
from .common import same_reuse_factor as reuse_factor

__all__ = [
    "ELEMENTWISE",
    "SEARCH_FROM",
    "THRESHOLD_CLASS",
    "check",
    "config_names",
    "hls_class",
    "hls_layers",
    "layer",
    "precisions",
    "reuse_factor",
    "search_steps",
    "tables",
    "verify",
]

THRESHOLD_CLASS = "EdgebnnThreshold"
# elementwise: commutes with a flatten, and streams one packet out per packet in
ELEMENTWISE = True


def hls_class(node: Node) -> str:
    """hls4ml's class of the layer after its flows."""
    return THRESHOLD_CLASS


def check(node: Node, src: Node, io_type: str, where: str) -> None:
    """Nothing to refuse: the layer compares and selects in the graph's own types."""


def compare_type(node: Node, src: Node) -> FixedType:
    """The type the layer compares in: ``src``'s without the low bits its lattice fixes (see the module docstring)."""
    s = compare_shift(node, src.type.width)
    if s == 0:
        return src.type
    return src.type.replace(width=src.type.width - s, rounding="TRN", overflow="WRAP", sat_bits=0)


def tables(node: Node) -> tuple[np.ndarray, np.ndarray]:
    """The (thresholds, levels) codes the layer holds, one row per channel."""
    t, lv = node.params["thresholds"], node.params["levels"]
    if t.shape[1] == 0:
        # a constant channel: one dummy threshold whose both levels are the constant
        t = np.zeros((t.shape[0], 1), dtype=np.int64)
        lv = np.repeat(lv, 2, axis=1)
    return t, lv


SEARCH_FROM = 7  # thresholds per channel (a 3-bit output) from which the layer searches instead of counting


def search_steps(n_thresholds: int) -> int:
    """The binary search's compares for ``n_thresholds`` thresholds per channel (the bits of the
    count), or 0 below :data:`SEARCH_FROM`, where the layer counts every comparator."""
    return int(n_thresholds).bit_length() if n_thresholds >= SEARCH_FROM else 0


def layer(node: Node, src: Node) -> dict:
    """The layer-list fields (besides name and inputs): sizes and the tables as values."""
    t, lv = tables(node)
    # one table row per channel: the last axis, or every flat feature of a threshold moved
    # before a flatten in io_stream (the template's channel is the flat index % n_chan)
    return dict(
        class_name=THRESHOLD_CLASS,
        n_in=int(np.prod(node.shape)),
        n_chan=int(t.shape[0]),
        n_thresholds=int(t.shape[1]),
        search_steps=search_steps(int(t.shape[1])),
        thresholds_data=compare_type(node, src).from_codes(t >> compare_shift(node, src.type.width)).reshape(-1),
        levels_data=node.type.from_codes(lv).reshape(-1),
    )


def precisions(node: Node, src: Node) -> dict[str, str]:
    """The layer's precisions: thresholds in the compare type, levels and result in the node's."""
    return {"thresholds": precision(compare_type(node, src)), "levels": precision(node.type), "result": precision(node.type)}


def verify(layer, node: Node, src: Node, backend, reuse_factor: int) -> list[str]:
    """Post-flow check: the thresholds' and levels' types."""
    prec = precisions(node, src)
    expect_precision(backend, layer, "thresholds", layer.get_weights("thresholds").type.precision, prec["thresholds"])
    expect_precision(backend, layer, "levels", layer.get_weights("levels").type.precision, prec["levels"])
    return []


hls_layers = own_hls_layer(hls_class)
