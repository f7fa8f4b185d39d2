"""Cost of a ``maxpool2d`` node: hls4ml's ``Pooling2D`` with pool_op Max.

``ph x pw`` windows over ``C`` channels, ``Wx`` the input width (which is also the output's).
No multiplier, no DSP. Each window is a chain of ``ph*pw - 1`` comparators of ``Wx`` bits
(``lut_per_compare_bit * Wx`` LUTs, a carry chain between two variables), each selecting the
larger value (a 2:1 mux of ``Wx`` bits, ``lut_per_cast_bit * Wx`` LUTs). In io_parallel
hls4ml's ``nnet::max`` walks the window in a loop (``y = x[i] > y ? x[i] : y``), a chain of
``ph*pw - 1`` compare levels that HLS does not rebalance (a select is not an associative
operator to it: CSV row 105's 128-value max takes 42 cycles in its HLS report); in io_stream
``reduce`` builds a balanced tree of ``ceil(log2(ph*pw))`` levels. Either takes
``_Context.cycles(levels * compare)``.

* io_parallel: one chain per output element, ``Ho*Wo*C*(ph*pw-1)`` comparators; II 1,
  latency the compare levels plus the tool's layer boundary, whose output registers
  (``Ho*Wo*C*Wx`` FFs) exist only where the boundary is a cycle.
* io_stream: line buffers as for conv2d (``(ph-1) * C`` shift registers of ``W * Wx`` bits,
  ``blocks._line_buffers``: SRL32 LUTs up to ``line_buffer_srl_max_depth``, BRAM18 beyond),
  the ``ph*pw*C*Wx`` window in FFs and ``C*(ph*pw-1)`` comparators used once per input pixel:
  ``II = H*W``, latency ``H*W`` plus the compare levels.
"""

from __future__ import annotations

import math

import numpy as np

from edgebnn.graph import Node

from .blocks import _pool_frame
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a maxpool2d node: comparators and selects of the input width (the reuse
    factor and the live outputs do not apply)."""
    c = ctx.c
    (ph, pw) = node.attrs["pool"]
    wx = widths[src.name]["result"].width
    per_window = ph * pw - 1
    per_comparator = wx * (c.lut_per_compare_bit + c.lut_per_cast_bit)  # compare + 2:1 select
    if ctx.io_type == "io_parallel":  # nnet::max's loop: a chain
        levels = ph * pw - 1
    else:  # nnet::reduce: a balanced tree
        levels = math.ceil(math.log2(ph * pw)) if ph * pw > 1 else 0
    frame = _pool_frame(node, src, ctx, widths, ctx.cycles(levels * ctx.ns("compare")), wx)
    comparators = frame["units"] * per_window
    lut = math.ceil(comparators * per_comparator) + frame["line_lut"]
    detail = {
        "pool": [ph, pw],
        "strides": list(node.attrs["strides"]),
        "channels": int(node.shape[-1]),
        "comparators": comparators,
        "compare_levels": levels,
        "input_bits": wx,
        "line_buffer_lut": frame["line_lut"],
    }
    return LayerEstimate(node.name, "maxpool2d", lut, frame["ff"], 0, frame["bram"], 0, frame["latency"], frame["ii"], detail)
