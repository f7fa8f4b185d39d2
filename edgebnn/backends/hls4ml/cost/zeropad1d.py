"""Cost of a ``zeropad1d`` node: hls4ml's ``ZeroPadding1D``.

io_parallel: wires and constant zeros, 0 of everything and 0 cycles. io_stream: one output
position written per cycle (``left + L + right`` cycles, II the same), plus its FIFO
(``blocks._stream``). No multiplier, no comparator.
"""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a zeropad1d node: wires in io_parallel; io_stream writes one position per cycle."""
    latency = int(node.shape[0]) if ctx.io_type == "io_stream" else 0
    detail = {"padding": list(node.attrs["padding"]), "elements": int(np.prod(node.shape))}
    return LayerEstimate(node.name, "zeropad1d", 0, 0, 0, 0, 0, latency, max(1, latency), detail)
