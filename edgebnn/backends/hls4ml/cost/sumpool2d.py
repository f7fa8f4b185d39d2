"""Cost of a ``sumpool2d`` node: hls4ml's ``Conv2D`` with identity weights (``ops/sumpool2d.py``).

The products by the constant weights 0 and 1 are selections the tool removes, so what remains is
per window a balanced tree of ``N - 1`` two-input adders (``N = ph * pw``, ``ceil(log2 N)``
levels), in io_stream behind the line buffers of the window: the model of ``avgpool2d``
(``avgpool2d.window_sums``, the frame ``blocks._pool_frame``), without the division (none).
"""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from .avgpool2d import window_sums
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a sumpool2d node: window adder trees of the input width."""
    return window_sums(node, src, ctx, widths)
