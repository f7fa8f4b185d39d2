"""Cost of an ``add`` node: hls4ml's ``Merge`` (op add) of two inputs, elementwise; an add of
``k`` inputs is the chain of ``k - 1`` of them the export builds (``blocks._merge_chain``).

Per output element of each merge one adder of its result width ``Wo`` (the exact partial sum's,
the node's for the last; ``lut_per_adder_bit * Wo`` LUTs, a carry chain); only the elements some
later node reads are built (``live``). hls4ml runs each merge as its own function: chained into
its neighbours by Vivado HLS (0 cycles), a pipelined function with registered outputs in Vitis
HLS (the tool's layer boundary in cycles, ``Wo`` FFs per element); II 1. io_stream adds one
pixel's channels per cycle: the adders are built for ``C`` elements, take ``H*W - 1`` more
cycles, and the II is ``H*W``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from edgebnn.graph import Node

from .blocks import _elementwise_frame, _merge_chain
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: list[Node], rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of an add node: adders of each merge's result width over the live elements (the reuse factor does not apply)."""

    def merge(step: Node, wo: int) -> LayerEstimate:
        frame = _elementwise_frame(step, ctx, live, wo)
        adders = frame["units"]
        detail = {"elements": frame["units"], "adders": adders, "adder_bits": adders * wo, "output_bits": wo}
        return LayerEstimate(step.name, "add", 0, frame["ff"], 0, 0, 0, frame["latency"], frame["ii"], detail)

    row = _merge_chain(node, src, ctx, widths, merge)
    return dataclasses.replace(row, lut=math.ceil(row.detail["adder_bits"] * ctx.c.lut_per_adder_bit))


def reads_live(reader: Node, node: Node, live: np.ndarray, graph, strategy: str, rf: int) -> np.ndarray:
    """An elementwise node reads the values it writes live."""
    return live
