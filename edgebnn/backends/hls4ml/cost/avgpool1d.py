"""Cost of an ``avgpool1d`` node: hls4ml's ``Pooling1D`` with pool_op Average, costed as the
avgpool2d model (:mod:`.avgpool2d`) of its one-row twin (``graph/ops/_oned.as_2d``, ``H = 1``,
``ph = 1``): a tree of ``p - 1`` adders per window (the division by ``p = 2**k`` is wiring), one
tree per output element in io_parallel, ``C`` trees used once per input position in io_stream.

A pool over its whole input that is flattened is hls4ml's ``GlobalPooling1D``
(``ops._pooling.global1d``): in io_parallel the same ``nnet::avg`` as ``Pooling1D``; in io_stream
one running sum per channel in the exact accumulator (the input width plus ``k`` bits), ``C``
adders and ``C * (Wx + k)`` FFs, ``II = L`` (``blocks._global_pool_stream``); the division is
wiring.
"""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from ..ops._pooling import is_global1d
from . import avgpool2d
from .blocks import _global_pool_stream, _one_row
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of an avgpool1d node: the avgpool2d row of its one-row twin, or hls4ml's running
    sum for a global pool in io_stream."""
    if not (ctx.io_type == "io_stream" and is_global1d(node)):
        return _one_row(avgpool2d.cost, node, src, rf, ctx, widths, warnings, live)
    wx = widths[src.name]["result"].width
    k = (int(node.attrs["pool"][0]) - 1).bit_length()
    g = _global_pool_stream(node, src, ctx, ctx.c.lut_per_adder_bit, wx + k, ctx.cycles(ctx.ns("add")))
    detail = {
        "pool": list(node.attrs["pool"]),
        "strides": list(node.attrs["strides"]),
        "channels": g["units"],
        "adders": g["units"],
        "adder_levels": 1,
        "input_bits": wx,
        "line_buffer_lut": 0,
        "global": True,
    }
    return LayerEstimate(node.name, node.op, g["lut"], g["ff"], 0, 0, 0, g["latency"], g["ii"], detail)
