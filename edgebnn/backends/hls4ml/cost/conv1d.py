"""Cost of a ``conv1d`` node as hls4ml 1.3.0 builds a 1-D convolution: the conv2d model
(:mod:`.conv2d`) of its one-row twin (``graph/ops/_oned.as_2d``, ``H = 1``, ``kh = 1``).

One im2col dense unit of ``n_in = k*C`` inputs and ``F`` outputs, used once per output position
in io_parallel (``P = Lo``: the ``P:1`` window mux and buffer) and once per input position in
io_stream (no line buffers: a one-row kernel keeps none, only the ``k*C`` window in FFs).
"""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from . import conv2d
from .blocks import _one_row
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a conv1d node: the conv2d row of its one-row twin."""
    return _one_row(conv2d.cost, node, src, rf, ctx, widths, warnings, live)
