"""Cost of a ``sumpool1d`` node: hls4ml's ``Conv1D`` with identity weights (``ops/sumpool1d.py``),
costed as the sumpool2d model (:mod:`.sumpool2d`) of its one-row twin (``graph/ops/_oned.as_2d``,
``H = 1``, ``ph = 1``): a balanced tree of ``p - 1`` adders per window of the input width."""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from . import sumpool2d
from .blocks import _one_row
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a sumpool1d node: the sumpool2d row of its one-row twin."""
    return _one_row(sumpool2d.cost, node, src, rf, ctx, widths, warnings, live)
