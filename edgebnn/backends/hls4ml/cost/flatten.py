"""Cost of a ``flatten`` node: a reshape.

io_parallel: wires, 0 of everything and 0 cycles. io_stream: hls4ml repacks the stream, one
cycle per input pixel (``H*W`` cycles, II the same), plus its FIFO (``blocks._stream``); but a
flatten that only dense layers read is no process at all: hls4ml 1.3.0 writes it as
``auto& out = in;`` and the dense reads the pixel stream itself (``STREAM_ALIAS_READERS``, checked
on a project written by edgebnn's export), so it costs nothing and adds no FIFO.
"""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from .context import _Context
from .row import LayerEstimate

# io_stream: read only by these ops, hls4ml aliases the flatten's stream to its input's
STREAM_ALIAS_READERS = ("dense",)


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a flatten node: wires in io_parallel; io_stream repacks one input pixel per cycle."""
    pixels = int(np.prod(src.shape[:-1]))
    latency = pixels if ctx.io_type == "io_stream" else 0
    return LayerEstimate(node.name, "flatten", 0, 0, 0, 0, 0, latency, max(1, latency), {"elements": int(np.prod(node.shape))})
