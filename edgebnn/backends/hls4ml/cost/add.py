"""Cost of an ``add`` node: hls4ml's ``Merge`` (op add) of two inputs, elementwise.

Per output element ``k - 1`` adders of the output width ``Wo`` for ``k`` inputs
(``lut_per_adder_bit * Wo`` LUTs each, a carry chain); only the elements some later node reads
are built (``live``). hls4ml runs it as its own function: chained into its neighbours by Vivado
HLS (0 cycles), a pipelined function with registered outputs in Vitis HLS (the tool's layer
boundary in cycles, ``Wo`` FFs per element); II 1. io_stream adds one pixel's channels per cycle:
the adders are built for ``C`` elements, take ``H*W - 1`` more cycles, and the II is ``H*W``.
"""

from __future__ import annotations

import math

import numpy as np

from edgebnn.graph import Node

from .blocks import _elementwise_frame
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: list[Node], rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of an add node: adders of the output width over the live elements (the reuse factor does not apply)."""
    wo = widths[node.name]["result"].width
    frame = _elementwise_frame(node, ctx, live, wo)
    adders = frame["units"] * (len(src) - 1)
    lut = math.ceil(adders * wo * ctx.c.lut_per_adder_bit)
    detail = {"elements": frame["units"], "inputs": len(src), "adders": adders, "output_bits": wo}
    return LayerEstimate(node.name, "add", lut, frame["ff"], 0, 0, 0, frame["latency"], frame["ii"], detail)
