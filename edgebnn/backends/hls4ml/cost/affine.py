"""Cost of an ``affine`` node (hls4ml's ``BatchNormalization`` with constant scale and offset),
elementwise: per element a constant multiplier as shifted copies of the input added together
(``_csd_digits(|scale|) - 1`` adders of the output width ``Wo``, a power of two being a free
shift; a zero scale only the constant), then the offset's adder (``Wo`` bits, none for a zero
offset), each ``lut_per_adder_bit`` LUTs per bit. Only the elements some later node reads are
built (``live``).

Latency: the adder levels of the constant product plus the offset's, in cycles, plus the tool's
layer boundary (registered outputs, ``Wo`` FFs per element, where it is a cycle); II 1. After a
convolution it works per element in io_parallel (``H*W*C`` units); io_stream processes one
pixel per cycle: the units are built for ``C`` elements, take ``H*W - 1`` more cycles, and the
II is ``H*W``. The reuse factor does not apply.
"""

from __future__ import annotations

import math

import numpy as np

from edgebnn.graph import Node

from .blocks import _csd_digits, _positions
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of an affine node: constant multipliers and offset adders of the live channels."""
    c = ctx.c
    wo = widths[node.name]["result"].width
    scale = np.abs(np.asarray(node.params["scale"], dtype=np.int64))
    offset = np.asarray(node.params["offset"], dtype=np.int64)
    keep = np.ones(scale.shape, dtype=bool) if live is None else np.asarray(live, dtype=bool)
    adders = np.maximum(_csd_digits(scale) - 1, 0) + (offset != 0)  # per channel
    pixels = _positions(node)
    stream = ctx.io_type == "io_stream" and pixels > 1
    p = 1 if stream else pixels
    lut = math.ceil(p * c.lut_per_adder_bit * wo * int(adders[keep].sum()))
    levels = int(np.ceil(np.log2(np.maximum(_csd_digits(scale), 1))).max(initial=0)) + int((offset != 0).any())
    latency = (ctx.cycles(levels * ctx.ns("add")) if levels else 0) + ctx.boundary
    ff = p * int(keep.sum()) * wo if ctx.boundary else 0
    if stream:
        latency += pixels - 1
    detail = {"channels": int(scale.size), "adders": int(adders[keep].sum()), "output_bits": wo}
    return LayerEstimate(node.name, "affine", lut, ff, 0, 0, 0, max(latency, 1), pixels if stream else 1, detail)
