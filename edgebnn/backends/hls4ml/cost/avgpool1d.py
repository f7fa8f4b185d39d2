"""Cost of an ``avgpool1d`` node: hls4ml's ``Pooling1D`` with pool_op Average, costed as the
avgpool2d model (:mod:`.avgpool2d`) of its one-row twin (``graph/ops/_oned.as_2d``, ``H = 1``,
``ph = 1``): a tree of ``p - 1`` adders per window (the division by ``p = 2**k`` is wiring), one
tree per output element in io_parallel, ``C`` trees used once per input position in io_stream."""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from . import avgpool2d
from .blocks import _one_row
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of an avgpool1d node: the avgpool2d row of its one-row twin."""
    return _one_row(avgpool2d.cost, node, src, rf, ctx, widths, warnings, live)
