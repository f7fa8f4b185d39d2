"""Cost of a ``pad2d`` node: edgebnn's ``EdgebnnPad2D`` (``hls_templates/nnet_edgebnn_pad.h``).

io_parallel: the constant and the copies are wires, 0 of everything and 0 cycles. io_stream:
one output pixel per cycle (``Ho*Wo`` cycles, II the same), a multiplexer per output bit
between the input packet and the constant (``C * W`` LUTs, ``lut_per_adder_bit`` each as for
an adder bit), plus its FIFO (``blocks._stream``).
"""

from __future__ import annotations

import math

import numpy as np

from edgebnn.graph import Node

from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a pad2d node: wires in io_parallel; io_stream writes one pixel per cycle."""
    pixels = int(node.shape[0] * node.shape[1])
    bits = int(node.shape[2]) * widths[node.name]["result"].width
    stream = ctx.io_type == "io_stream"
    lut = math.ceil(bits * ctx.c.lut_per_adder_bit) if stream else 0
    latency = pixels if stream else 0
    return LayerEstimate(node.name, "pad2d", lut, 0, 0, 0, 0, latency, max(1, latency), {"elements": int(np.prod(node.shape))})
