"""Cost of a ``maxpool1d`` node: hls4ml's ``Pooling1D`` with pool_op Max, costed as the maxpool2d
model (:mod:`.maxpool2d`) of its one-row twin (``graph/ops/_oned.as_2d``, ``H = 1``, ``ph = 1``):
``p - 1`` comparators of the input width per window, one window per output element in
io_parallel, ``C`` windows used once per input position in io_stream (no line buffers).

A pool over its whole input that is flattened is hls4ml's ``GlobalPooling1D``
(``ops._pooling.global1d``): in io_parallel the same ``nnet::max`` over the window as
``Pooling1D``; in io_stream one running maximum per channel, ``C`` comparators and selects of the
input width and ``C * Wx`` FFs, ``II = L`` (``blocks._global_pool_stream``).
"""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from ..ops._pooling import is_global1d
from . import maxpool2d
from .blocks import _global_pool_stream, _one_row
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a maxpool1d node: the maxpool2d row of its one-row twin, or hls4ml's running
    maximum for a global pool in io_stream."""
    if not (ctx.io_type == "io_stream" and is_global1d(node)):
        return _one_row(maxpool2d.cost, node, src, rf, ctx, widths, warnings, live)
    c = ctx.c
    wx = widths[src.name]["result"].width
    g = _global_pool_stream(node, src, ctx, c.lut_per_compare_bit + c.lut_per_cast_bit, wx, ctx.cycles(ctx.ns("compare")))
    detail = {
        "pool": list(node.attrs["pool"]),
        "strides": list(node.attrs["strides"]),
        "channels": g["units"],
        "comparators": g["units"],
        "compare_levels": 1,
        "input_bits": wx,
        "line_buffer_lut": 0,
        "global": True,
    }
    return LayerEstimate(node.name, node.op, g["lut"], g["ff"], 0, 0, 0, g["latency"], g["ii"], detail)
