"""Cost of a ``zeropad1d`` node: hls4ml's ``ZeroPadding1D`` (code 0), or edgebnn's ``EdgebnnPad1D``
(another code), costed as the pad2d model (:mod:`.pad2d`) of its one-row twin.

ZeroPadding1D: io_parallel: wires and constant zeros, 0 of everything and 0 cycles. io_stream:
one output position written per cycle (``left + L + right`` cycles, II the same), plus its FIFO
(``blocks._stream``). No multiplier, no comparator.
"""

from __future__ import annotations

import numpy as np

from edgebnn.graph import Node

from . import pad2d
from .blocks import _one_row
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a zeropad1d node: wires in io_parallel; io_stream writes one position per cycle
    (and multiplexes the input and the constant for a non-zero code, as pad2d)."""
    if int(node.attrs["pad_code"]) != 0:
        return _one_row(pad2d.cost, node, src, rf, ctx, widths, warnings, live)
    latency = int(node.shape[0]) if ctx.io_type == "io_stream" else 0
    detail = {"padding": list(node.attrs["padding"]), "elements": int(np.prod(node.shape))}
    return LayerEstimate(node.name, "zeropad1d", 0, 0, 0, 0, 0, latency, max(1, latency), detail)
