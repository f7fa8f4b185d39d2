"""Cost of a ``maxpool1d`` node: hls4ml's ``Pooling1D`` with pool_op Max, costed as the maxpool2d
model (:mod:`.maxpool2d`) of its one-row twin (``graph/ops/_oned.as_2d``, ``H = 1``, ``ph = 1``):
``p - 1`` comparators of the input width per window, one window per output element in
io_parallel, ``C`` windows used once per input position in io_stream (no line buffers)."""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from . import maxpool2d
from .blocks import _one_row
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a maxpool1d node: the maxpool2d row of its one-row twin."""
    return _one_row(maxpool2d.cost, node, src, rf, ctx, widths, warnings, live)
