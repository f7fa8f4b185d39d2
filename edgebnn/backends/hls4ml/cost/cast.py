"""Cost of a ``cast`` node: a fixed-point conversion (relu and/or requantization), elementwise.

Per output bit a select (``lut_per_cast_bit`` LUTs: zero for a negative input under relu, the
saturation value on overflow); rounding modes other than truncation (``TRN``) that drop low
bits add an incrementer (``lut_per_adder_bit`` per output bit); saturation (any overflow mode
but ``WRAP``) that drops high bits compares them, ``ceil(dropped / level_mux_inputs_per_lut) + 1``
LUTs. A cast that neither applies relu, rounds, saturates nor drops a bit is a wire (0 LUTs).
Only the elements some later node reads are built (``live``; Vivado removes the rest).

hls4ml runs it as its own activation function: chained into its neighbours by Vivado HLS and
by Vitis HLS on UltraScale+ parts (0 cycles, no register), a pipelined function with registered
outputs in Vitis HLS on 7-series parts (the tool's layer boundary in cycles, ``Wo`` FFs per
element); II 1. After a convolution it works per
element in io_parallel (``H*W*C`` units); io_stream processes one pixel per cycle: the units
are built for ``C`` elements, take ``H*W - 1`` more cycles, and the II is ``H*W``.
"""

from __future__ import annotations

import math

import numpy as np

from edgebnn.graph import Node

from .blocks import _positions
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a cast node: output selects, incrementers and saturation compares of the
    live elements (the reuse factor does not apply)."""
    c = ctx.c
    ti, to = widths[src.name]["result"], widths[node.name]["result"]
    n = int(np.prod(node.shape))
    pixels = _positions(node)
    stream = ctx.io_type == "io_stream" and pixels > 1  # one pixel per cycle through C units
    if live is not None:
        n = pixels * int(live.sum())  # elements no later node reads are removed
    if stream:
        n //= pixels
    drop_low = max(0, to.lsb_exp - ti.lsb_exp) if ti.lsb_exp < to.lsb_exp else 0
    drop_high = max(0, ti.integer - to.integer)
    rounds = drop_low > 0 and to.rounding not in ("TRN",)
    saturates = drop_high > 0 and to.overflow != "WRAP"
    per = to.width * c.lut_per_cast_bit  # the output select (relu/saturation mux)
    if rounds:
        per += to.width * c.lut_per_adder_bit
    if saturates:
        per += math.ceil(drop_high / c.level_mux_inputs_per_lut) + 1
    relu = bool(node.attrs.get("relu", False))
    if not (relu or rounds or saturates) and drop_high == 0 and drop_low == 0:
        per = 0  # a plain wire
    lut = math.ceil(n * per)
    # an hls4ml activation function: chained into its neighbours by Vivado HLS (and Vitis HLS on
    # UltraScale+), a pipelined function with registered outputs (the tool's layer boundary) in
    # Vitis HLS on 7-series parts
    latency = ctx.boundary
    ff = n * to.width if latency else 0
    if stream:
        latency += pixels - 1
    detail = {
        "elements": n,
        "input_bits": ti.width,
        "output_bits": to.width,
        "relu": relu,
        "rounds": rounds,
        "saturates": saturates,
    }
    return LayerEstimate(node.name, "cast", lut, ff, 0, 0, 0, latency, pixels if stream else 1, detail)


def reads_live(reader: Node, node: Node, live: np.ndarray, graph, strategy: str, rf: int) -> np.ndarray:
    """An elementwise node reads the values it writes live."""
    return live
