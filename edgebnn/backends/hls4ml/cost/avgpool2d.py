"""Cost of an ``avgpool2d`` node: hls4ml's ``Pooling2D`` with pool_op Average.

``ph x pw = 2**k`` windows over ``C`` channels, ``Wx`` the input width. Each window is a
balanced tree of ``ph*pw - 1`` two-input adders (``blocks._adder_tree``, level ``l`` of
``Wx + l`` bits, ``lut_per_adder_bit`` LUTs per bit, UG474/UG574); the division by ``2**k`` is
wiring (the exact output type has ``k`` more fraction bits), no multiplier, no DSP. The ``k``
adder levels take ``_Context.cycles(k * add)``.

* io_parallel: one tree per output element, ``Ho*Wo*C`` trees; II 1, latency the adder levels
  plus the tool's layer boundary, whose output registers (``Ho*Wo*C*Wo_bits`` FFs) exist only
  where the boundary is a cycle.
* io_stream: as for maxpool2d, line buffers of ``(ph-1) * C`` shift registers of ``W * Wx``
  bits (``blocks._line_buffers``: SRL32 LUTs up to ``line_buffer_srl_max_depth``, BRAM18
  beyond), the ``ph*pw*C*Wx`` window in FFs and ``C`` trees used once per input pixel:
  ``II = H*W``, latency ``H*W`` plus the adder levels.
"""

from __future__ import annotations

import math

import numpy as np

from edgebnn.graph import Node

from .blocks import _adder_tree, _pool_frame
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of an avgpool2d node: window adder trees of the input width (the reuse factor
    and the live outputs do not apply)."""
    return window_sums(node, src, ctx, widths)


def window_sums(node: Node, src: Node, ctx: _Context, widths) -> LayerEstimate:
    """The row of a pool that sums its ``N``-value windows (avgpool2d, sumpool2d): per window a
    balanced tree of ``N - 1`` adders in ``ceil(log2 N)`` levels, in the pooling frame."""
    ph, pw = node.attrs["pool"]
    wx = widths[src.name]["result"].width
    k = math.ceil(math.log2(ph * pw))
    adders, adder_bits = _adder_tree(np.array([ph * pw]), wx, wx + k)
    frame = _pool_frame(node, src, ctx, widths, ctx.cycles(k * ctx.ns("add")), widths[node.name]["result"].width)
    lut = math.ceil(frame["units"] * adder_bits * ctx.c.lut_per_adder_bit) + frame["line_lut"]
    detail = {
        "pool": [ph, pw],
        "strides": list(node.attrs["strides"]),
        "channels": int(node.shape[-1]),
        "adders": frame["units"] * adders,
        "adder_levels": k,
        "input_bits": wx,
        "line_buffer_lut": frame["line_lut"],
    }
    return LayerEstimate(node.name, node.op, lut, frame["ff"], 0, frame["bram"], 0, frame["latency"], frame["ii"], detail)
