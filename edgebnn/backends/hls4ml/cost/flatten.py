"""Cost of a ``flatten`` node: a reshape.

io_parallel: wires, 0 of everything and 0 cycles. io_stream: hls4ml repacks the stream, one
cycle per input pixel (``H*W`` cycles, II the same), plus its FIFO (``blocks._stream``).
"""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a flatten node: wires in io_parallel; io_stream repacks one input pixel per cycle."""
    pixels = int(np.prod(src.shape[:-1]))
    latency = pixels if ctx.io_type == "io_stream" else 0
    return LayerEstimate(node.name, "flatten", 0, 0, 0, 0, 0, latency, max(1, latency), {"elements": int(np.prod(node.shape))})
