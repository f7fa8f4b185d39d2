"""Cost of hls4ml's softmax after the graph's output (the row ``"softmax"``).

A graph frozen with ``strip_softmax=True`` (``graph.meta["stripped_softmax"]``) ends where
hls4ml would still build its softmax; the estimator adds it as a last row over the output's
last axis, ``n`` values of ``Wi`` bits (the output's width, also the result width), following
``nnet_activation.h`` of hls4ml 1.3.0 (``table_size`` 1024 for exp and 1/x, ``exp_table_t`` /
``inv_table_t`` / ``inv_inp_t`` / ``accum_t`` ``ap_fixed<18,8,RND,SAT>``:
``softmax_table_size`` x ``softmax_table_bits``):

* ``stable`` (hls4ml's default): the maximum by a tree of ``n - 1`` compare-and-select units
  (``Wi`` bits, ``lut_per_compare_bit + lut_per_adder_bit`` LUTs per bit), ``n`` subtractions
  ``x_max - x_i``; ``latency`` skips both.
* ``exp`` from a table indexed by the top 10 bits (a slice, no logic); a ROM has two read
  ports, so ``n`` parallel reads replicate it ``ceil(n/2)`` times (one 1Kx18 BRAM18 each,
  ``blocks._bram18``).
* the sum by a tree of ``n - 1`` adders of ``softmax_table_bits`` bits, ``1/sum`` from a second
  table (one BRAM18), then ``n`` products ``exp_i * inv`` of 18x18 bits (``blocks._dsp_slices``
  DSPs each, or a LUT multiplier of ``lut_per_mult_bit2 * 18 * 18`` LUTs when multipliers are
  forced to fabric); in io_stream the process runs at the model's reuse factor ``R`` and the
  products share ``ceil(n / R)`` multipliers.
* latency: the tool's layer boundary, two table reads (``_Context.rom`` cycles each), the cycles
  beyond the first of the logic before each read (max tree and subtraction; sum tree), and the
  multiply (at least 1). Registers: every internal cycle boundary holds ``n`` table-width
  values, plus the ``n`` outputs. II 1.
* An output with more than one position (rank > 1) gets one softmax per position: LUT, FF, DSP
  and BRAM18 times the positions, the same latency and II.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from edgebnn.graph import Node

from .blocks import _bram18, _dsp_slices, _positions
from .context import _Context
from .row import LayerEstimate


def cost(last: Node, ctx: _Context, widths, implementation: str, reuse_factor: int = 1) -> LayerEstimate:
    """The softmax row after the graph's output node ``last`` (``"stable"`` or ``"latency"``),
    built with the model's ``reuse_factor``."""
    n = int(last.shape[-1])
    wi = widths[last.name]["result"].width
    row = _softmax(n, wi, wi, ctx, implementation, reuse_factor)
    p = _positions(last)
    if p > 1:
        row = dataclasses.replace(row, lut=row.lut * p, ff=row.ff * p, dsp=row.dsp * p, bram18=row.bram18 * p)
    return row


def _softmax(n: int, wi: int, wr: int, ctx: _Context, implementation: str, reuse_factor: int = 1) -> LayerEstimate:
    """One softmax over ``n`` values of ``wi`` bits with ``wr``-bit results."""
    c = ctx.c
    tb = c.softmax_table_bits
    levels = math.ceil(math.log2(n)) if n > 1 else 0
    stable = implementation == "stable"
    lut = (n - 1) * tb * c.lut_per_adder_bit  # sum tree
    pre_ns = 0.0
    if stable:
        lut += (n - 1) * wi * (c.lut_per_compare_bit + c.lut_per_adder_bit)  # compare + select
        lut += n * wi * c.lut_per_adder_bit  # x_max - x_i
        pre_ns = levels * (ctx.ns("compare") + ctx.ns("add")) + ctx.ns("add")
    use_dsp = ctx.multipliers != "lut"
    # io_stream: the softmax process is pipelined at the reuse factor, its n products share
    # ceil(n / R) multipliers (CSV rows 2 and 11: 10 and 3 products at R = 16 and 8, one DSP)
    mults = math.ceil(n / max(1, reuse_factor)) if ctx.io_type == "io_stream" else n
    dsp = mults * int(_dsp_slices(np.array([tb]), np.array([tb]), ctx.board.dsp_ports)[0]) if use_dsp else 0
    if not use_dsp:
        lut += mults * c.lut_per_mult_bit2 * tb * tb
    mult_ns = ctx.ns("dsp_mult") if use_dsp else ctx.ns("lut_mult")
    rom_each = _bram18(tb, c.softmax_table_size, c.bram18_shapes)
    bram = (math.ceil(n / 2) + 1) * rom_each
    latency = (
        ctx.boundary
        + 2 * ctx.rom
        + ctx.extra_cycles(pre_ns)
        + ctx.extra_cycles(levels * ctx.ns("add"))
        + max(1, ctx.cycles(mult_ns))
    )
    ff = max(0, latency - 1) * n * tb + n * wr
    detail = {
        "n": n,
        "implementation": implementation,
        "input_bits": wi,
        "table_bits": tb,
        "table_size": c.softmax_table_size,
        "exp_table_copies": math.ceil(n / 2),
        "adder_levels": levels,
    }
    return LayerEstimate("softmax", "softmax", math.ceil(lut), ff, dsp, bram, 0, latency, 1, detail)
