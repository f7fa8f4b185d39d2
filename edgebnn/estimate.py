"""Resources and latency of a deployment graph on an FPGA board, before any synthesis.

``estimate(graph, board)`` reads only the graph (integer weights, fixed-point types, per-channel
bounds) and a board profile (:mod:`edgebnn.boards`), and returns per-node rows and totals of
LUT, FF, DSP, BRAM18 and URAM, latency in clock cycles and the initiation interval (II), as
hls4ml's ``io_parallel`` Vivado/Vitis templates would build them.

**This is a first, analytic model.** Its formulas follow how hls4ml 1.3.0 writes a dense layer
and how Vivado maps the pieces; its constants (all in :data:`CONSTANTS`, nowhere else) are
round figures from the sources named below and from a look at
``shared/reference/hls4ml_synthesis_results.csv``, not yet fitted to it. Trust the direction
of a change (a larger reuse factor gives fewer DSPs and a longer latency, a binary layer uses
no DSP, wider weights cost more, zero weights cost nothing) more than any absolute number.

**Revision for issue 5** (these rules take precedence over the older text below where they
differ; checked against the CSV by ``bench/validate_estimates.py``):

* A constant product with fewer than ``mult_min_csd_digits`` (3) signed digits is shifts and
  one adder (``shift_add``), not a multiplier; only the rest are "mul" operations, go to DSP
  or LUTs by width (or as forced by ``multipliers="dsp"|"lut"``), and count for sharing.
* Latency strategy with ``R > 1``: hls4ml's ``multiplier_limit = ceil(n/R) - floor(zeros/R)``
  bounds the mul instances, so ``II = min(R, ceil(muls / limit))`` (the CSV's II is often
  below R) and ``min(limit, ceil(muls / II))`` shared general multipliers are built (DSPs
  when both declared widths exceed ``lut_mult_max_bits``), with an ``II:1`` mux on the data
  operand and a small ROM for the constant weights.
* ``types=`` overrides accumulator / result / weight types per node (hls4ml's default
  ``ap_fixed<16,6>`` accumulators); products are truncated to the accumulator.
* Latency of a dense: ``(II - 1) + ceil((mult + levels * add) / T) + dense_extra_cycles``.
  Registers: partial sums at internal cycle boundaries, every output not held in a DSP's
  output register, and with sharing the accumulators and multiplier operands.
* ``cast`` nodes (relu and/or requantization): ``lut_per_cast_bit`` LUTs per output bit plus
  an incrementer when rounding and a compare when saturating; latency = the tool's layer
  boundary (below).
* DSP cap: past the device's DSP count the rest are rebuilt as LUT constant multipliers
  (``lut_per_dsp`` per layer); ``dsp_needed`` keeps the demand and ``fits`` is false.
* :func:`fit` searches the valid reuse factors for the smallest that fits.

**Revision for issue 6** (HLS tool timing, softmax, io_stream II):

* ``hls_tool`` selects the operator timing (``ModelConstants.timing_ns[tool][dsp]``): Vivado
  HLS (up to 2020.1) chains hls4ml's layers inside the top pipeline (layer boundary 0 cycles,
  a cast costs no cycle); Vitis HLS (2020.2+, the default) keeps every layer function a
  pipeline with registered I/O (``ceil(layer / T)`` cycles per dense, cast and softmax) and
  assumes slower operators. A multiply longer than the usable period ``T`` is a multi-cycle
  operator ending on a register: ``ceil(mult / T) + ceil(L / floor(T / add))`` cycles;
  a shorter one chains with the adders: ``ceil((mult + L * add) / T)``. Dense latency =
  boundary + ``(II - 1)`` + those cycles + ``dense_extra_cycles`` (0). The ns figures are
  round numbers chosen so the CSV's Vivado HLS 2019.2/2020.1 (5 and 25 ns) and Vitis HLS 2021.1
  (3.33 and 5 ns) designs come out right on average, not fitted per row.
* A graph frozen with ``strip_softmax=True`` (``graph.meta["stripped_softmax"]``) gets hls4ml's
  softmax as a last row ``"softmax"`` (see :func:`_softmax`: max tree, exp and 1/x tables of
  1024 x 18 bits in BRAM18, sum tree, ``n`` 18x18 products).
* ``io_stream``: hls4ml's dense(stream) reads its inputs, runs the dense and writes its
  outputs one after the other, ``stream_dense_overhead_cycles`` more, and is not pipelined
  as a whole: its II is its latency (DATAFLOW's II is the slowest process's).

**Revision for issue 7** (LUT/FF; checked against the CSV's post-synthesis rows, nothing fitted):

* Unread logic is removed (Vivado's sweep): :func:`_live_outputs` walks the graph backwards; a
  dense with constant weights reads input ``i`` only when row ``i`` of its weights has a
  non-zero entry in a live output column, a cast reads what it writes live. A dense builds
  only its live outputs (products, adders, registers) and a cast only its live elements;
  hls4ml's ``multiplier_limit`` (and the valid reuse factors) still count the whole layer.
* DSP cap: a multiplier HLS bound to a DSP "mul" core was not strength-reduced, so Vivado's
  LUT multiplier for it keeps one partial product per ``1`` bit of the constant's binary
  magnitude (``popcount - 1`` adders of ``Wx + we`` bits, not the signed-digit count), and
  the tree adder folded into the slice's post-adder moves to fabric with it.
* ``io_stream`` dense: hls4ml's dense(stream) copies its input stream into a completely
  partitioned ``data[n_in]`` array and holds ``res[n_out]`` until its write loop has sent it,
  so ``n_in * Wx + n_out * Wr`` more register bits per dense (besides the output FIFO).

**Revision for convolutions** (conv2d and flatten nodes):

* ``conv2d`` (io_parallel): hls4ml 1.3.0's ``conv_2d_latency_cl`` (nnet_conv2d_latency.h)
  builds one im2col dense unit of ``n_in = kh*kw*C`` inputs and ``n_out = F`` outputs (the
  weights reshaped to ``(kh*kw*C, F)``, so every dense rule above applies: zero and free
  products, multiplier kinds, ``multiplier_limit``, adder trees) and runs it in
  ``PartitionLoop`` over ``P = Ho*Wo`` pixels (ParallelizationFactor 1: ``n_pixels = 1``)
  pipelined at ``II = R``: with ``II_u = max(II_dense, R)``, ``II = P * II_u``, latency
  ``= dense latency + (P - 1) * II_u``. Its ``fill_buffer`` selects each window element from one of the ``P`` pixel
  positions: a ``P:1`` mux of ``Wx`` bits per window element, ``n_in * Wx * ceil((P-1) /
  (mux_inputs_per_lut - 1))`` LUTs (``im2col_mux`` in the detail), and the window buffer
  ``n_in * Wx`` FFs.
* ``conv2d`` (io_stream): ``conv_2d_buffer_cl`` (nnet_conv2d_stream.h) keeps ``kh - 1`` line
  buffers per channel, ``ap_shift_reg`` of ``W`` (the input width) elements: ``(kh-1) * C``
  shift registers of ``W * Wx`` bits, built as SRL32 LUTs (``ceil(W / 32)`` LUTs per bit)
  up to ``line_buffer_srl_max_depth`` and in BRAM18 beyond; the ``kh*kw*C`` window in FFs.
  The pixel loop reads one input pixel per ``II_u`` cycles: ``II = H*W * II_u``,
  latency ``= II + dense latency``. The multiplier side is the same dense unit.
* ``flatten``: a reshape, free in io_parallel (0 of everything, 0 cycles); in io_stream
  hls4ml repacks the stream (one cycle per input pixel, ``H*W``) plus its FIFO.
* ``maxpool2d`` (hls4ml ``Pooling2D``, pool_op Max; ``ph x pw`` windows, ``Wx`` the input
  width, which is also the output's): no multiplier, no DSP. Each window is a chain of
  ``ph*pw - 1`` comparators of ``Wx`` bits (``lut_per_compare_bit * Wx`` LUTs, a carry chain
  between two variables) each selecting the larger value (a 2:1 mux of ``Wx`` bits,
  ``lut_per_cast_bit * Wx`` LUTs). io_parallel: one chain per output element per channel,
  ``Ho*Wo*C*(ph*pw-1)`` comparators, II 1, latency ``ceil(log2(ph*pw))`` compare levels
  (``cycles(levels * compare)``) plus the layer boundary (whose output registers, ``Ho*Wo*C*Wx``
  FFs, exist only where the boundary is a cycle). io_stream: line buffers as for conv2d
  (``(ph-1) * C`` shift registers of ``W * Wx`` bits, SRL32 LUTs up to
  ``line_buffer_srl_max_depth`` and BRAM18 beyond), the ``ph*pw*C*Wx`` window in FFs and
  ``C*(ph*pw-1)`` comparators used once per input pixel: ``II = H*W``, latency ``H*W`` plus
  the compare levels.
* ``threshold`` / ``cast`` after a convolution work per element (hls4ml's io_parallel
  activations are fully unrolled over ``H*W*C``), with per-channel thresholds; io_stream
  activations process one pixel per cycle, so their units are built for ``C`` elements and
  take ``H*W`` cycles.

Dense nodes (``y = x @ W + b``; ``Wx`` input width, ``Wa`` accumulator width from the graph,
``R`` reuse factor):

* Products. Latency strategy (and Resource with ``R = 1``, where hls4ml keeps the weights as
  constants): each weight is a constant, so a zero weight costs nothing (hls4ml's
  ``multiplier_limit = ceil(n_in*n_out/R) - floor(n_zeros/R)``, Vivado removes the product),
  and a product needs no multiplier when the weight is a power of two (``±1`` included: a shift
  and a sign), or either operand has at most ``free_operand_bits`` bits (binary/ternary codes:
  a select or an xnor; the adder tree is the popcount). A remaining product uses the weight's
  *effective* width ``we`` (its odd part, trailing zero bits are a free shift, plus a sign
  bit). Resource strategy with ``R > 1``: weights come from a memory, so every one of the
  ``n_in*n_out`` products is built from the declared weight width and zeros save nothing.
* Multiplier kind. A product goes to DSP slices when both operands are wider than
  ``lut_mult_max_bits`` (6): the CSV shows ``ap_fixed<6,1>`` weights times 16-bit inputs in
  LUTs (rows 26/27: 23 DSPs for about 970 non-zero weights) and ``ap_fixed<8,1>`` weights in
  DSPs (rows 71-73). One DSP48E1 multiplies 25x18 signed bits, a DSP48E2 27x18 (UG479,
  UG579); a wider product takes ``min(ceil(a/A)*ceil(b/B), ceil(a/B)*ceil(b/A))`` slices.
  Otherwise it is built from LUTs. With ``R = 1`` and constant weights it is a constant
  multiplier: the weight in canonical signed-digit form has ``d`` non-zero digits, and
  ``d - 1`` adders of ``Wx + we`` bits sum the shifted inputs. Shared (``R > 1``) or
  memory-fed, it is a general ``Wx x we`` multiplier of about ``lut_per_mult_bit2 * Wx * we``
  LUTs (DS255: a speed-optimised 9x9 LUT multiplier takes 115 LUTs).
* Sharing. ``DSP = ceil(sum of slices / R)``, ``LUT_mult = ceil(sum of LUT costs / R)``; with
  ``R > 1`` each of the ``ceil(products / R)`` multiplier inputs gets an ``R:1`` mux of ``Wx``
  bits, ``ceil((R-1)/3)`` LUTs per bit (a LUT6 is a 4:1 mux, UG474).
* Adder tree. Output ``o`` sums ``t_o`` terms (its non-zero products plus a non-zero bias), per
  cycle ``ceil(t_o/R)`` of them, in a balanced tree: ``ceil(t_o/R) - 1`` adders, level ``l``
  ``min(Wa, Wt + l)`` bits wide with ``Wt = min(Wa, Wx + Ww)`` the product width of the
  declared types (ap_fixed's product rule) and ``Wa`` the graph's accumulator width as the
  cap; with ``R > 1`` one more ``Wa``-bit adder per output accumulates. One first-level adder
  per DSP multiplier is folded into the slice's post-adder (HLS multiply-add matching,
  UG1399). Each adder costs ``lut_per_adder_bit`` LUTs per bit (one LUT and one carry bit per
  sum bit, UG474/UG574). A binary weight times a wide input still counts ``Wx + 2``-bit terms
  (its exact width is ``Wx + 1``).
* Latency (cycles, the HLS report's measure). ``mult = ceil(t_mult / T)`` (``t_mult`` the
  slowest multiplier present, 0 when all products are free), ``tree = ceil(L / k)`` with
  ``L = ceil(log2(max ceil(t_o/R)))`` adder levels (one more to accumulate when ``R > 1``) and
  ``k = max(1, floor(T / add_ns))`` levels per cycle, ``T`` the clock period less hls4ml's
  12.5 % uncertainty; latency ``= (R - 1) + mult + tree + 1`` (the output register), plus
  ``bram_read_cycles`` when weights are in BRAM. ``II = R`` (hls4ml: ``PIPELINE II=R``).
  The per-family nanosecond figures in :data:`CONSTANTS` are assumptions.
* FF. Pipeline registers at each cycle boundary of the adder tree (the partial sums alive
  there, as wide as that level's adders), registered LUT-multiplier outputs when the multiply takes its own
  cycle (DSP outputs are registered inside the slice), and the ``n_out * Wa`` output register
  (twice with ``R > 1``: accumulator and output).
* BRAM18 (Resource strategy, ``R > 1``: hls4ml maps the weights to ``ROM_nP_BRAM`` reshaped
  into ``ceil(n_in*n_out/R)`` weights per word): a memory ``R`` words deep and
  ``ceil(n_in*n_out/R) * Ww`` bits wide, ``ceil(width / port) * ceil(R / depth)`` BRAM18 with
  the widest RAMB18 port for that depth (512x36, 1Kx18, 2Kx9, 4Kx4, 8Kx2, 16Kx1; UG473,
  UG573). Resource strategy snaps an invalid ``R`` to the nearest valid one exactly as hls4ml
  1.3.0 does (``FPGABackend.set_closest_reuse_factor``) and says so in ``warnings``.

Threshold nodes (per channel ``K`` ascending thresholds on the input type, width ``Wi``): a
threshold at or below the channel's lower bound, or above its upper bound, is a constant and
costs nothing; equal thresholds share one comparator. Each live comparator is
``lut_per_compare_bit * Wi`` LUTs (a carry chain against a constant); with ``K >= 2`` live
ones, every output bit is a function of the ``K`` comparator bits, ``ceil(K/6)`` LUTs
(``level_mux_inputs_per_lut``). ``FF = channels * Wo``, latency 1 cycle (more if the compare
does not fit the clock), ``II = 1``. The reuse factor does not apply.

Whole design: latency is the sum of the rows (hls4ml chains the layers), ``II`` the largest
row's. ``io_stream`` adds one cycle and a depth-1 FIFO (its output bits in FFs) per node.
URAM is never used (hls4ml does not place weights there by default). Nodes with more than one
position (shape rank > 1) are one dense unit used once per position (latency and II times the
positions) and one threshold unit per element.

``fits`` is true when every total is at most ``utilization_limit`` of the board (a device
with 0 of a resource fits only designs that use none). When the design needs more DSPs than
the device has, Vivado caps DSP inference at the device's count and builds the rest from LUTs
(seen in the CSV); the estimate then warns and its LUT figure is too low.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .boards import RESOURCES, Board, load_board
from .errors import EdgebnnError
from .fixed import FixedType
from .graph import Graph, Node

STRATEGIES = ("Latency", "Resource")
IO_TYPES = ("io_parallel", "io_stream")


@dataclasses.dataclass(frozen=True)
class ModelConstants:
    """Every number of the model, in one place (see the module docstring for the sources)."""

    # a product needs no multiplier when an operand has at most this many bits (binary/ternary)
    free_operand_bits: int = 2
    # a product is built in LUTs when either operand has at most this many bits (CSV rows 26/27, 71-73)
    lut_mult_max_bits: int = 6
    # LUTs of a LUT multiplier per bit-product Wx*we (DS255 9x9: 115 LUTs speed-optimised)
    lut_per_mult_bit2: float = 1.0
    # LUTs per bit of a two-input adder (one LUT + carry per bit, UG474/UG574)
    lut_per_adder_bit: float = 1.0
    # LUTs per bit of a comparator against a constant (carry chain)
    lut_per_compare_bit: float = 1.0
    # data inputs of a one-bit mux per LUT6 when building R:1 operand muxes (UG474: 4:1 per LUT6)
    mux_inputs_per_lut: int = 4
    # comparator bits one LUT6 combines into a threshold output bit
    level_mux_inputs_per_lut: int = 6
    # hls4ml's default clock uncertainty (fraction of the period HLS keeps free)
    clock_uncertainty: float = 0.125
    # read latency of a weight BRAM (registered output)
    bram_read_cycles: int = 1
    # a constant product with fewer non-zero signed digits than this is built as shifts and
    # one adder, not as a multiplier (HLS strength reduction); such products are not "mul"
    # operations, so hls4ml's multiplier_limit does not share them
    mult_min_csd_digits: int = 3
    # LUTs per output bit of a cast (the relu / saturation select)
    lut_per_cast_bit: float = 0.5  # a LUT6_2 gives two such bits sharing the sign input
    # cycles a dense layer adds beyond its datapath and the tool's layer boundary
    dense_extra_cycles: int = 0
    # io_stream: cycles each node spends reading and writing its streams
    stream_cycles: int = 1
    # io_stream: a dense process reads its input, runs the dense and writes its output one after
    # the other (hls4ml's dense(stream) is not pipelined as a whole), plus this many cycles of
    # loop entry/exit; its II is that latency (DATAFLOW runs at the slowest process's interval)
    stream_dense_overhead_cycles: int = 2
    # hls4ml softmax (nnet_activation.h, 1.3.0 defaults): table_size 1024 for exp and 1/x,
    # exp_table_t / inv_table_t / inv_inp_t / accum_t ap_fixed<18,8,RND,SAT>
    softmax_table_size: int = 1024
    softmax_table_bits: int = 18
    # io_stream conv2d line buffers (ap_shift_reg of the input width): SRL32 LUTs per bit up to
    # this depth, BRAM18 beyond (Vivado maps long shift registers to memory)
    srl_bits_per_lut: int = 32
    line_buffer_srl_max_depth: int = 128
    # overall factors on LUT and FF of a dense layer (1.0 = the formulas as written)
    lut_scale: float = 1.0
    ff_scale: float = 1.0
    # RAMB18 aspect ratios (max depth, port width in bits), UG473 / UG573
    bram18_shapes: tuple = ((512, 36), (1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1))
    # operator timing by HLS tool and DSP generation (ns as the tool's scheduler assumes them):
    # one adder level, a DSP multiply, a LUT multiply, a comparator, the boundary of an hls4ml
    # layer function, and "rom" = cycles of a table (BRAM ROM) read. Vivado HLS (2019-2020)
    # chains hls4ml's layers inside the top pipeline (boundary 0); Vitis HLS (2020.2+) keeps each
    # layer a pipelined function with registered I/O and a slower, more conservative operator
    # library (the CSV's Vitis HLS 2021.1 designs take about 3x the cycles of Vivado HLS ones).
    timing_ns: Mapping = dataclasses.field(default_factory=lambda: {
        "vivado_hls": {
            "DSP48E1": {"add": 1.2, "dsp_mult": 4.5, "lut_mult": 2.5, "compare": 1.2, "layer": 0.0, "rom": 1},
            "DSP48E2": {"add": 0.8, "dsp_mult": 2.0, "lut_mult": 1.8, "compare": 0.8, "layer": 0.0, "rom": 1},
        },
        "vitis_hls": {
            "DSP48E1": {"add": 2.0, "dsp_mult": 7.0, "lut_mult": 2.5, "compare": 1.5, "layer": 3.5, "rom": 2},
            "DSP48E2": {"add": 1.4, "dsp_mult": 5.0, "lut_mult": 1.8, "compare": 1.0, "layer": 2.5, "rom": 2},
        },
    })


CONSTANTS = ModelConstants()


class EstimateError(EdgebnnError):
    """An option or a graph the estimator cannot handle."""


@dataclasses.dataclass(frozen=True)
class LayerEstimate:
    """One node's resources (``lut`` ... ``uram``), ``latency`` in cycles and ``ii``."""

    name: str
    op: str
    lut: int
    ff: int
    dsp: int
    bram18: int
    uram: int
    latency: int
    ii: int
    detail: dict = dataclasses.field(default_factory=dict)

    def resources(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in RESOURCES}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "op": self.op, **self.resources(),
            "latency": self.latency, "ii": self.ii, "detail": _jsonable(self.detail),
        }


@dataclasses.dataclass(frozen=True)
class Estimate:
    graph: str
    board: Board
    strategy: str
    reuse_factor: Any
    io_type: str
    clock_period_ns: float
    utilization_limit: float
    rows: tuple[LayerEstimate, ...]
    warnings: tuple[str, ...] = ()
    dsp_needed: int = 0  # DSPs the design asks for before Vivado caps them at the device's count
    hls_tool: str = "vitis_hls"

    @property
    def totals(self) -> dict[str, int]:
        return {key: sum(getattr(r, key) for r in self.rows) for key in RESOURCES}

    @property
    def available(self) -> dict[str, int]:
        return self.board.resources()

    @property
    def utilization(self) -> dict[str, float]:
        """Percent of the board per resource (``inf`` when the board has none and some is used)."""
        out = {}
        for key, used in self.totals.items():
            have = self.available[key]
            out[key] = 100.0 * used / have if have else (0.0 if used == 0 else math.inf)
        return out

    @property
    def fits(self) -> bool:
        have = self.available
        if self.dsp_needed > have["dsp"] * self.utilization_limit:
            return False
        return all(used == 0 or (have[key] > 0 and used / have[key] <= self.utilization_limit)
                   for key, used in self.totals.items())

    @property
    def latency_cycles(self) -> int:
        return sum(r.latency for r in self.rows)

    @property
    def ii(self) -> int:
        return max((r.ii for r in self.rows), default=1)

    @property
    def latency_ns(self) -> float:
        return self.latency_cycles * self.clock_period_ns

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON types (``inf`` utilization becomes ``None``)."""
        return {
            "graph": self.graph,
            "board": {**{f.name: getattr(self.board, f.name) for f in dataclasses.fields(self.board)}},
            "strategy": self.strategy,
            "reuse_factor": _jsonable(self.reuse_factor),
            "io_type": self.io_type,
            "clock_period_ns": self.clock_period_ns,
            "hls_tool": self.hls_tool,
            "utilization_limit": self.utilization_limit,
            "rows": [r.to_dict() for r in self.rows],
            "totals": self.totals,
            "available": self.available,
            "utilization_percent": {k: (None if math.isinf(v) else v) for k, v in self.utilization.items()},
            "fits": self.fits,
            "dsp_needed": self.dsp_needed,
            "latency_cycles": self.latency_cycles,
            "latency_ns": self.latency_ns,
            "ii": self.ii,
            "warnings": list(self.warnings),
        }

    def table(self) -> str:
        """A readable text table: one row per node, totals, the board and % of the board."""
        head = ("node", "op", "LUT", "FF", "DSP", "BRAM18", "URAM", "latency", "II")
        body = [(r.name, r.op, *map(str, r.resources().values()), str(r.latency), str(r.ii)) for r in self.rows]
        tot = self.totals
        body.append(("total", "", *map(str, tot.values()), str(self.latency_cycles), str(self.ii)))
        body.append((self.board.name, "", *map(str, self.available.values()), "", ""))
        body.append(("% of board", "", *(_pct(v) for v in self.utilization.values()), "", ""))
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

        def line(cells):
            return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        rule = "-" * len(line(head))
        rf = self.reuse_factor if not isinstance(self.reuse_factor, Mapping) else "per node"
        lines = [
            f"estimate of graph '{self.graph}' on {self.board.name} ({self.board.part}): {self.strategy}, "
            f"reuse factor {rf}, {self.io_type}, clock {self.clock_period_ns:g} ns, {self.hls_tool}",
            line(head), rule, *(line(r) for r in body[:-3]), rule, *(line(r) for r in body[-3:]),
            f"fits under {100 * self.utilization_limit:g}% of every resource: {'yes' if self.fits else 'no'}; "
            f"latency {self.latency_cycles} cycles = {self.latency_ns:g} ns, II {self.ii} cycles",
        ]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def estimate(graph, board, strategy: str = "Latency", reuse_factor=1, io_type: str = "io_parallel",
             clock_period: float | None = None, utilization_limit: float = 0.8,
             constants: ModelConstants = CONSTANTS, types: Mapping | None = None,
             multipliers: str = "auto", hls_tool: str = "vitis_hls", softmax=None,
             softmax_implementation: str = "stable") -> Estimate:
    """Estimate resources and latency of ``graph`` on ``board``.

    Args:
        graph: a :class:`~edgebnn.graph.Graph` or the path of a saved graph.
        board: a :class:`~edgebnn.boards.Board`, a board name (``"pynq-z2"``) or a ``.yaml`` path.
        strategy: hls4ml's ``"Latency"`` or ``"Resource"`` (any letter case).
        reuse_factor: an integer >= 1 for every dense node, or a mapping node name -> integer
            (dense nodes not named get 1).
        io_type: ``"io_parallel"`` or ``"io_stream"``.
        clock_period: clock period in ns; the board's ``clock_period_ns`` when None.
        utilization_limit: ``fits`` requires every resource at or below this fraction (0, 1].
        constants: the model's constants (:data:`CONSTANTS`), replaceable for calibration.
        types: types the design is built with where they differ from the graph's, e.g.
            ``{"dense0": {"accum": "fixed<16,6>"}, "*": {"result": "fixed<16,6>"}}`` (``"*"``
            applies to every node it fits). Keys: ``accum`` (a dense node's adder width; its
            products are truncated to it, as hls4ml casts them to ``accum_t``), ``result`` (the
            width the next node reads; a dense node's defaults to its ``accum``), ``weight`` (the
            declared weight width, used where weights are not constants). An hls4ml design built
            with its default ``ap_fixed<16,6>`` is ``{"*": {"accum": "fixed<16,6>", "result": ...}}``.
        multipliers: ``"auto"`` (Vivado/Vitis choose DSP or LUTs by operand widths), ``"dsp"``
            or ``"lut"`` (the build forces every real multiplier into DSPs or into fabric, as
            ``config_op mul -impl dsp|fabric`` does).
        hls_tool: the HLS tool whose scheduler sets the latency: ``"vitis_hls"`` (Vitis HLS
            2020.2 and later, the default) or ``"vivado_hls"`` (Vivado HLS up to 2020.1); names
            such as ``"Vivado HLS 2019.2"`` are accepted (see ``ModelConstants.timing_ns``).
        softmax: add hls4ml's softmax after the graph's output: ``None`` (default) when the
            graph was frozen with ``strip_softmax=True`` (``graph.meta["stripped_softmax"]``),
            ``False`` never, ``True`` always (over the output's last axis).
        softmax_implementation: hls4ml's ``"stable"`` (its default) or ``"latency"``.
    """
    if isinstance(graph, (str, os.PathLike)):
        graph = Graph.load(graph)
    if not isinstance(graph, Graph):
        raise EstimateError(f"estimate needs a deployment graph or its file path, got {type(graph).__name__}")
    board = load_board(board)
    strategy = _strategy(strategy)
    if io_type not in IO_TYPES:
        raise EstimateError(f"unknown io_type {io_type!r}; use one of {', '.join(IO_TYPES)}")
    clock = board.clock_period_ns if clock_period is None else clock_period
    if isinstance(clock, bool) or not isinstance(clock, (int, float)) or not 0 < clock < math.inf:
        raise EstimateError(f"clock_period must be a positive number of ns, got {clock_period!r}")
    if isinstance(utilization_limit, bool) or not isinstance(utilization_limit, (int, float)) \
            or not 0 < utilization_limit <= 1:
        raise EstimateError(f"utilization_limit must be a fraction in (0, 1], got {utilization_limit!r}")
    rf_of = _reuse_factors(graph, reuse_factor)
    if multipliers not in MULTIPLIERS:
        raise EstimateError(f"unknown multipliers {multipliers!r}; use one of {', '.join(MULTIPLIERS)}")
    widths = _resolve_types(graph, types)
    tool = hls_tool_family(hls_tool)
    if softmax_implementation not in SOFTMAX_IMPLEMENTATIONS:
        raise EstimateError(f"unknown softmax_implementation {softmax_implementation!r}; use one of "
                            f"{', '.join(SOFTMAX_IMPLEMENTATIONS)}")
    if softmax not in (None, True, False):
        raise EstimateError(f"softmax must be None (from the graph), True or False, got {softmax!r}")

    ctx = _Context(board, strategy, io_type, float(clock), constants, multipliers, tool)
    live = _live_outputs(graph, strategy, rf_of)
    rows, warnings = [], []
    for node in graph.compute_nodes():
        src = graph[node.inputs[0]]
        if node.op == "dense":
            row = _dense(node, src, rf_of[node.name], ctx, widths, warnings, live.get(node.name))
        elif node.op == "conv2d":
            row = _conv2d(node, src, rf_of[node.name], ctx, widths, warnings, live.get(node.name))
        elif node.op == "flatten":
            row = _flatten(node, src, ctx)
        elif node.op == "maxpool2d":
            row = _maxpool2d(node, src, ctx, widths)
        elif node.op == "threshold":
            row = _threshold(node, src, ctx, widths)
        elif node.op == "cast":
            row = _cast(node, src, ctx, widths, live.get(node.name))
        else:
            raise EstimateError(
                f"graph node {node.name!r}: estimate does not know op {node.op!r} yet; it models "
                f"{', '.join(KNOWN_OPS)} (update edgebnn or estimate a graph without this node)"
            )
        rows.append(_stream(row, node, ctx, widths))
    stripped = graph.meta.get("stripped_softmax")
    if softmax or (softmax is None and stripped):
        last = graph.compute_nodes()[-1]
        n = int(last.shape[-1])
        wi = widths[last.name]["result"].width
        row = _softmax(n, wi, wi, ctx, softmax_implementation)
        if _positions(last) > 1:
            p = _positions(last)
            row = dataclasses.replace(row, lut=row.lut * p, ff=row.ff * p, dsp=row.dsp * p, bram18=row.bram18 * p)
        rows.append(_stream(row, None, ctx, widths, bits=n * wi))
    dsp_needed = sum(r.dsp for r in rows)
    rows = _cap_dsp(rows, board, warnings)
    rf_shown = dict(reuse_factor) if isinstance(reuse_factor, Mapping) else int(reuse_factor)
    est = Estimate(graph.name, board, strategy, rf_shown, io_type, float(clock), float(utilization_limit),
                   tuple(rows), tuple(warnings), dsp_needed, tool)
    return est


KNOWN_OPS = ("dense", "conv2d", "maxpool2d", "flatten", "threshold", "cast")
_WEIGHTED = ("dense", "conv2d")
SOFTMAX_IMPLEMENTATIONS = ("stable", "latency")
MULTIPLIERS = ("auto", "dsp", "lut")
_TYPE_KEYS = ("accum", "result", "weight")


def fit(graph, board, strategy: str = "Latency", limit: float = 0.8, io_type: str = "io_parallel",
        clock_period: float | None = None, types: Mapping | None = None, multipliers: str = "auto",
        constants: ModelConstants = CONSTANTS, hls_tool: str = "vitis_hls", softmax=None) -> Fit:
    """The smallest reuse factor (the fastest design) with which ``graph`` fits ``board``.

    Candidates are the reuse factors hls4ml keeps as given for some dense node of the graph
    (:func:`valid_reuse_factors`; others would be snapped to one of these), tried in
    ascending order with one model-wide reuse factor; a design fits when every resource is
    at most ``limit`` of the board. Returns a :class:`Fit`; when nothing fits, its
    ``reuse_factor`` and ``estimate`` are None and ``reason`` says what is still too big at
    the largest reuse factor.
    """
    if isinstance(graph, (str, os.PathLike)):
        graph = Graph.load(graph)
    dense = [n for n in graph.compute_nodes() if n.op in _WEIGHTED]
    candidates = sorted({rf for n in dense for rf in valid_reuse_factors(*_matrix_shape(n))}) or [1]
    kwargs = dict(strategy=strategy, io_type=io_type, clock_period=clock_period, utilization_limit=limit,
                  types=types, multipliers=multipliers, constants=constants, hls_tool=hls_tool, softmax=softmax)
    tried = []
    last = None
    for rf in candidates:
        est = estimate(graph, board, reuse_factor=rf, **kwargs)
        tried.append((rf, est.fits))
        if est.fits:
            return Fit(rf, est, tuple(tried), "")
        last = est
    over = {k: f"{v:.0f}%" for k, v in last.utilization.items() if v > 100 * limit}
    reason = (f"nothing fits {last.board.name} under {100 * limit:g}% of each resource: even the largest "
              f"reuse factor {candidates[-1]} needs " + ", ".join(f"{k.upper()} {v}" for k, v in over.items())
              + " of the board; try the Resource strategy, narrower weights or a larger board")
    return Fit(None, None, tuple(tried), reason)


@dataclasses.dataclass(frozen=True)
class Fit:
    """Result of :func:`fit`: the reuse factor and its estimate, or None and the reason."""

    reuse_factor: int | None
    estimate: Estimate | None
    tried: tuple[tuple[int, bool], ...]
    reason: str

    @property
    def fits(self) -> bool:
        return self.reuse_factor is not None

    def __str__(self) -> str:
        if not self.fits:
            return self.reason
        e = self.estimate
        return (f"smallest reuse factor that fits {e.board.name} under {100 * e.utilization_limit:g}%: "
                f"{self.reuse_factor} (latency {e.latency_cycles} cycles, II {e.ii}; tried "
                f"{len(self.tried)} value(s))")


# --------------------------------------------------------------------------- internals


@dataclasses.dataclass(frozen=True)
class _Context:
    board: Board
    strategy: str
    io_type: str
    clock: float
    c: ModelConstants
    multipliers: str = "auto"
    hls_tool: str = "vitis_hls"

    @property
    def usable_ns(self) -> float:
        return self.clock * (1.0 - self.c.clock_uncertainty)

    def ns(self, what: str) -> float:
        return self.c.timing_ns[self.hls_tool][self.board.dsp_type][what]

    def cycles(self, ns: float) -> int:
        return math.ceil(ns / self.usable_ns) if ns > 0 else 0

    @property
    def boundary(self) -> int:
        """Cycles an hls4ml layer function adds at its boundary (0: chained into its neighbours)."""
        return self.cycles(self.ns("layer"))

    @property
    def rom(self) -> int:
        return int(self.ns("rom"))

    def datapath_cycles(self, mult_ns: float, levels: int) -> int:
        """Cycles of a multiply followed by ``levels`` adder levels. A multiply that fits the
        clock chains with the adders; a longer one is a multi-cycle operator ending on a
        register, after which the adders chain ``floor(T / add)`` levels per cycle."""
        add = self.ns("add")
        if mult_ns <= self.usable_ns:
            return max(1, self.cycles(mult_ns + levels * add))
        per_cycle = max(1, math.floor(self.usable_ns / add))
        return self.cycles(mult_ns) + math.ceil(levels / per_cycle)

    def extra_cycles(self, ns: float) -> int:
        """Cycles beyond the first that combinational logic of ``ns`` needs (it chains into
        the cycle of the register or memory read that follows it)."""
        return max(0, self.cycles(ns) - 1)


def hls_tool_family(tool: str) -> str:
    """``"vivado_hls"`` or ``"vitis_hls"`` from names like ``"Vivado HLS 2020.1"``, ``"vitis"``."""
    if isinstance(tool, str):
        t = tool.lower().replace("_", " ").replace("-", " ")
        if "vivado" in t:
            return "vivado_hls"
        if "vitis" in t:
            return "vitis_hls"
    raise EstimateError(f"unknown hls_tool {tool!r}; use 'vitis_hls' (Vitis HLS 2020.2 and later) or 'vivado_hls' "
                        "(Vivado HLS up to 2020.1)")


def _resolve_types(graph: Graph, types) -> dict[str, dict[str, FixedType]]:
    """Node name -> {"accum"/"result"/"weight": FixedType} as the design is built."""
    out: dict[str, dict[str, FixedType]] = {n.name: {} for n in graph.nodes}
    if types is None:
        types = {}
    if not isinstance(types, Mapping):
        raise EstimateError(f"types must map node names (or '*') to {{'accum'|'result'|'weight': type}}, got {types!r}")
    for name in types:
        if name != "*" and name not in out:
            raise EstimateError(f"types names node {name!r}, which graph {graph.name!r} does not have; its nodes are "
                                f"{', '.join(out)}")
    for node in graph.nodes:
        for key in ("*", node.name):
            spec = types.get(key) or {}
            if not isinstance(spec, Mapping):
                raise EstimateError(f"types[{key!r}] must be a mapping like {{'accum': 'fixed<16,6>'}}, got {spec!r}")
            for what, value in spec.items():
                if what not in _TYPE_KEYS:
                    raise EstimateError(f"types[{key!r}] has key {what!r}; use {', '.join(_TYPE_KEYS)}")
                if what in ("accum", "weight") and node.op not in _WEIGHTED:
                    if key == "*":
                        continue
                    raise EstimateError(f"types[{key!r}][{what!r}]: node {node.name!r} is a {node.op} node, "
                                        f"only dense and conv2d nodes have an {what} type")
                try:
                    out[node.name][what] = value if isinstance(value, FixedType) else FixedType.from_string(value)
                except (ValueError, TypeError) as err:
                    raise EstimateError(f"types[{key!r}][{what!r}] = {value!r} is not a fixed-point type ({err})") from None
    for node in graph.nodes:
        t = out[node.name]
        if node.op in _WEIGHTED:
            t.setdefault("accum", node.type)
            t.setdefault("weight", node.fixed_attr("weight_type"))
            t.setdefault("result", t["accum"] if t["accum"] is not node.type else node.type)
        t.setdefault("result", node.type)
    return out


def _cap_dsp(rows: list[LayerEstimate], board: Board, warnings: list[str]) -> list[LayerEstimate]:
    """Vivado's ``synth_design -max_dsp`` default: no more DSPs than the device has; the other
    multipliers are built from LUTs (taken evenly from every layer)."""
    need = sum(r.dsp for r in rows)
    if need <= board.dsp:
        return rows
    warnings.append(
        f"the design needs {need} DSPs but {board.name} has {board.dsp}; Vivado caps DSP use at the device's count "
        f"and builds the other {need - board.dsp} multipliers from LUTs (included in the LUT estimate)"
    )
    keep = board.dsp / need
    out = []
    for r in rows:
        if not r.dsp:
            out.append(r)
            continue
        dsp = math.floor(r.dsp * keep)
        moved = r.dsp - dsp
        extra = math.ceil(moved * r.detail.get("lut_per_dsp", 0.0))
        out.append(dataclasses.replace(r, dsp=dsp, lut=r.lut + extra,
                                       detail={**r.detail, "dsp_moved_to_lut": moved, "lut_for_moved_dsp": extra}))
    return out


def _strategy(strategy) -> str:
    if isinstance(strategy, str):
        for s in STRATEGIES:
            if strategy.lower() == s.lower():
                return s
    raise EstimateError(f"unknown strategy {strategy!r}; the estimator models {', '.join(STRATEGIES)}")


def _check_rf(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise EstimateError(f"reuse factor {where} must be an integer >= 1, got {value!r}")
    return int(value)


def _reuse_factors(graph: Graph, reuse_factor) -> dict[str, int]:
    dense = [n.name for n in graph.compute_nodes() if n.op in _WEIGHTED]
    if isinstance(reuse_factor, Mapping):
        unknown = sorted(set(reuse_factor) - set(dense))
        if unknown:
            raise EstimateError(
                f"reuse factor given for {', '.join(map(repr, unknown))}, which is not a dense node of graph "
                f"{graph.name!r}; its dense and conv2d nodes are {', '.join(dense) or 'none'}"
            )
        return {name: _check_rf(reuse_factor.get(name, 1), f"of node {name!r}") for name in dense}
    rf = _check_rf(reuse_factor, "")
    return {name: rf for name in dense}


def _matrix_shape(node: Node) -> tuple[int, int]:
    """(n_in, n_out) of a dense node's weights, or of a conv2d node's im2col dense unit."""
    w = node.params["weight"]
    return (int(np.prod(w.shape[:-1])), int(w.shape[-1]))


def _positions(node: Node) -> int:
    return int(np.prod(node.shape[:-1])) if len(node.shape) > 1 else 1


def _signed_bits(magnitude: np.ndarray, signed: bool) -> np.ndarray:
    """Bits of a constant's odd part (trailing zeros are a free shift), plus the sign bit."""
    m = magnitude.astype(np.int64)
    odd = m // np.where(m > 0, m & -m, 1)
    bits = np.zeros(m.shape, dtype=np.int64)
    while np.any(odd > 0):
        bits += odd > 0
        odd >>= 1
    return bits + (1 if signed else 0)


def _popcount(magnitude: np.ndarray) -> np.ndarray:
    """'1' bits of each constant's binary magnitude."""
    n = magnitude.astype(np.int64).copy()
    ones = np.zeros(n.shape, dtype=np.int64)
    while np.any(n > 0):
        ones += n & 1
        n >>= 1
    return ones


def _csd_digits(magnitude: np.ndarray) -> np.ndarray:
    """Non-zero digits of each constant in canonical signed-digit (non-adjacent) form: a
    constant multiplier is that many shifted copies of the input added together."""
    n = magnitude.astype(np.int64).copy()
    digits = np.zeros(n.shape, dtype=np.int64)
    while np.any(n > 0):
        odd = (n & 1) == 1
        d = np.where(odd, 2 - (n & 3), 0)  # +1 or -1 where odd
        digits += odd
        n = (n - d) >> 1
    return digits


def _adder_tree(terms: np.ndarray, term_bits: int, acc_bits: int) -> tuple[int, int]:
    """Two-input adders and their summed widths for balanced trees over ``terms`` inputs each:
    level ``l`` halves the partial sums, each ``min(acc_bits, term_bits + l)`` bits wide."""
    t = terms.astype(np.int64).copy()
    adders = bits = 0
    level = 1
    while np.any(t > 1):
        n = int((t // 2).sum())
        adders += n
        bits += n * min(acc_bits, term_bits + level)
        t = t - t // 2
        level += 1
    return adders, bits


def _dsp_slices(a: np.ndarray, b: np.ndarray, ports: tuple[int, int]) -> np.ndarray:
    pa, pb = ports
    one = np.ceil(a / pa) * np.ceil(b / pb)
    two = np.ceil(a / pb) * np.ceil(b / pa)
    return np.minimum(one, two).astype(np.int64)


def valid_reuse_factors(n_in: int, n_out: int) -> list[int]:
    """hls4ml 1.3.0's valid reuse factors for a Resource dense (``FPGABackend._validate_reuse_factor``)."""
    n = n_in * n_out
    divisors = sorted({d for i in range(1, math.isqrt(n) + 1) if n % i == 0 for d in (i, n // i)})
    out = []
    for rf in divisors:
        mult_limit = math.ceil(n / min(n_in, rf))
        if (mult_limit % n_out == 0 or rf >= n_in) and (rf % n_in == 0 or rf < n_in):
            out.append(rf)
    return out


def _closest_reuse_factor(valid: list[int], chosen: int) -> int:
    """hls4ml's ``get_closest_reuse_factor``: nearest valid value, the smaller one on a tie."""
    import bisect

    pos = bisect.bisect_left(valid, chosen)
    if pos == 0:
        return valid[0]
    if pos == len(valid):
        return valid[-1]
    before, after = valid[pos - 1], valid[pos]
    return after if after - chosen < chosen - before else before


def _bram18(width_bits: int, depth: int, shapes) -> int:
    for max_depth, port in shapes:
        if depth <= max_depth:
            return math.ceil(width_bits / port)
    max_depth, port = shapes[-1]
    return math.ceil(width_bits / port) * math.ceil(depth / max_depth)


def _live_outputs(graph: Graph, strategy: str, rf_of: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Per node, which elements of its last axis some later node reads (Vivado removes the
    logic of an unread value). A dense with constant weights (Latency strategy, or Resource
    with ``R = 1``) reads input ``i`` only when row ``i`` of its weights has a non-zero entry
    in a live output column; a cast reads what it writes live; anything else (a threshold,
    weights in memory, the graph's output) reads or is everything."""
    nodes = graph.compute_nodes()
    live: dict[str, np.ndarray] = {}
    for node in reversed(nodes):
        width = int(node.shape[-1])
        readers = [n for n in nodes if node.name in n.inputs]
        if not readers:
            live[node.name] = np.ones(width, dtype=bool)
            continue
        need = np.zeros(width, dtype=bool)
        for r in readers:
            out = live[r.name]
            if r.op == "dense" and not (strategy == "Resource" and rf_of[r.name] > 1):
                w = np.asarray(r.params["weight"])
                need |= (w[:, out] != 0).any(axis=1)
            elif r.op == "cast":
                need |= out
            else:
                need |= True
        live[node.name] = need
    return live


def _dense(node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str],
           live: np.ndarray | None = None) -> LayerEstimate:
    c = ctx.c
    w = np.asarray(node.params["weight"], dtype=np.int64)
    wt = widths[node.name]["weight"]
    bias = node.params.get("bias")
    weights_in_memory = ctx.strategy == "Resource" and rf > 1
    n_dead = 0
    n_out_full = w.shape[1]
    zeros_full = int((w == 0).sum())  # hls4ml's multiplier_limit counts the whole layer
    if live is not None and not weights_in_memory and not live.all():
        # outputs no later node reads: Vivado removes their products and adders
        n_dead = int((~live).sum())
        w = w[:, live]
        bias = None if bias is None else np.asarray(bias)[live]
    n_in, n_out = w.shape
    wx = widths[src.name]["result"].width
    wa = widths[node.name]["accum"].width
    wr = widths[node.name]["result"].width
    bias_terms = (np.asarray(bias) != 0).astype(np.int64) if bias is not None else np.zeros(n_out, np.int64)
    detail: dict[str, Any] = {"n_in": n_in, "n_out": n_out, "input_bits": wx, "weight_bits": wt.width,
                              "accumulator_bits": wa, "result_bits": wr, "dead_outputs": n_dead}

    if ctx.strategy == "Resource":
        valid = valid_reuse_factors(n_in, n_out_full)
        if rf not in valid:
            used = _closest_reuse_factor(valid, rf)
            warnings.append(
                f"node {node.name!r}: reuse factor {rf} is not valid for a {n_in}x{n_out_full} Resource dense; hls4ml "
                f"uses {used} instead (valid: {', '.join(map(str, valid))}) and so does this estimate"
            )
            detail["reuse_factor_requested"] = rf
            rf = used
    detail["reuse_factor"] = rf
    weights_in_memory = ctx.strategy == "Resource" and rf > 1
    small = wt.width <= c.free_operand_bits or wx <= c.free_operand_bits
    mag = np.abs(w)
    if weights_in_memory:
        # every product exists and is a general multiplier of the declared widths
        present = np.ones(w.shape, dtype=bool)
        we = np.full(w.shape, wt.width, dtype=np.int64)
        free = np.full(w.shape, small)
        shift_add = np.zeros(w.shape, dtype=bool)
        digits = np.zeros(w.shape, dtype=np.int64)
        terms = np.full(n_out, n_in, dtype=np.int64) + (1 if bias is not None else 0)
    else:
        # constant weights: HLS turns a product with few signed digits into shifts and adds
        present = mag != 0
        digits = _csd_digits(mag)
        free = present & (small | (digits <= 1))
        shift_add = present & ~free & (digits < c.mult_min_csd_digits)
        we = _signed_bits(mag, wt.signed)
        terms = present.sum(axis=0) + bias_terms
    real = present & ~free & ~shift_add                     # "mul" operations
    wide = (we > c.lut_mult_max_bits) & (wx > c.lut_mult_max_bits)
    if ctx.multipliers == "dsp":
        dsp_prod = real
    elif ctx.multipliers == "lut":
        dsp_prod = np.zeros_like(real)
    else:
        dsp_prod = real & wide
    lut_prod = real & ~dsp_prod
    n_real = int(real.sum())
    detail["products"] = {"zero": int((~present).sum()), "free": int(free.sum()), "shift_add": int(shift_add.sum()),
                          "lut": int(lut_prod.sum()), "dsp": int(dsp_prod.sum())}

    # sharing: hls4ml's multiplier_limit bounds the "mul" instances; II follows from it
    if weights_in_memory:
        limit = math.ceil(n_in * n_out / rf)
        ii = rf
    else:
        limit = max(1, math.ceil(n_in * n_out_full / rf) - math.floor(zeros_full / rf))
        ii = max(1, min(rf, math.ceil(n_real / limit))) if rf > 1 else 1
    shared = rf > 1 and (weights_in_memory or n_real > limit)
    instances = min(n_real, limit) if shared else n_real
    detail.update(multiplier_limit=limit, multiplier_instances=instances)

    wx_arr = np.full(int(dsp_prod.sum()), wx)
    if shared:
        # a shared multiplier sees a different weight every cycle: general multipliers of the
        # declared width, split between DSP and LUT in the proportion of the products
        general_wide = wt.width > c.lut_mult_max_bits and wx > c.lut_mult_max_bits
        use_dsp = ctx.multipliers == "dsp" or (ctx.multipliers == "auto" and general_wide)
        n_dsp_inst = min(instances, math.ceil(n_real / ii)) if use_dsp else 0
        slices_each = int(_dsp_slices(np.array([wx]), np.array([wt.width]), ctx.board.dsp_ports)[0])
        dsp = n_dsp_inst * slices_each
        lut_mult = c.lut_per_mult_bit2 * wx * wt.width * (instances - n_dsp_inst)
        # an ii:1 mux on the data operand; a constant weight operand is a small ROM (one LUT6
        # holds 64 one-bit entries), a weight from memory needs none
        w_mux = 0 if weights_in_memory else wt.width * math.ceil(ii / 64)
        lut_mux = instances * (wx * math.ceil((ii - 1) / (c.mux_inputs_per_lut - 1)) + w_mux)
        lut_per_dsp = c.lut_per_mult_bit2 * wx * wt.width / slices_each
    else:
        dsp = int(_dsp_slices(wx_arr, we[dsp_prod], ctx.board.dsp_ports).sum())
        lut_mult = c.lut_per_adder_bit * float(((np.maximum(digits[lut_prod], 2) - 1) * (wx + we[lut_prod])).sum())
        lut_mux = 0
        # the same constant products built from LUTs if Vivado runs out of DSPs: HLS bound them
        # to a DSP "mul" core, so no strength reduction happened; Vivado's generic LUT multiplier
        # keeps, after constant propagation, one partial product per '1' bit of the constant
        # (binary, not recoded to signed digits): popcount - 1 adders of Wx + we bits
        moved = dsp_prod
        ones = _popcount(mag[moved])
        lut_per_dsp = (c.lut_per_adder_bit * float(((np.maximum(ones, 2) - 1) * (wx + we[moved])).sum()) / dsp) if dsp else 0.0
    lut_shift = c.lut_per_adder_bit * float((wx + we[shift_add]).sum())  # one adder each, never shared
    lut_mult = math.ceil(lut_mult + lut_shift)

    # adder tree over the products (truncated to the accumulator, as hls4ml casts them to accum_t)
    per_cycle = np.ceil(terms / ii).astype(np.int64)
    term_bits = min(wa, wx + wt.width)
    adders, adder_bits = _adder_tree(per_cycle, term_bits, wa)
    accumulators = int((terms > per_cycle).sum()) if ii > 1 else 0  # outputs summed over cycles
    adders, adder_bits = adders + accumulators, adder_bits + accumulators * wa
    folded = min(dsp, adders)  # one add behind each DSP multiply sits in its post-adder
    adders -= folded
    adder_bits = max(adder_bits - folded * min(wa, term_bits + 1), 0)
    if dsp:
        # a DSP moved to fabric by the device cap takes its folded post-adder with it
        lut_per_dsp += c.lut_per_adder_bit * folded * min(wa, term_bits + 1) / dsp
    lut_add = math.ceil(c.lut_per_adder_bit * adder_bits)

    # latency: the multiply, then the adder levels, as many per cycle as the clock allows
    if dsp:
        mult_ns = ctx.ns("dsp_mult")
    elif lut_mult:
        mult_ns = ctx.ns("lut_mult")
    else:
        mult_ns = 0.0
    widest = int(per_cycle.max(initial=0))
    levels = math.ceil(math.log2(widest)) if widest > 1 else 0
    if ii > 1:
        levels += 1
    path_ns = mult_ns + levels * ctx.ns("add")
    stages = ctx.datapath_cycles(mult_ns, levels)
    latency = ctx.boundary + (ii - 1) + stages + c.dense_extra_cycles
    if weights_in_memory:
        latency += c.bram_read_cycles

    # registers: the values alive at each internal cycle boundary (the adder-tree partial sums
    # there), the outputs, and with sharing the operands and accumulators of every multiplier
    ff = 0
    if stages > 1:
        for b in range(1, stages):
            level = min(levels, max(0, math.floor((b * ctx.usable_ns - mult_ns) / ctx.ns("add"))))
            ff += int(np.ceil(per_cycle / 2**level).sum()) * min(wa, term_bits + level)
    # an output that is one DSP product (plus a bias in its post-adder) is held in the DSP's
    # output register; any other output needs fabric registers
    dsp_terms = dsp_prod.sum(axis=0) if not weights_in_memory else np.zeros(n_out, np.int64)
    in_dsp = (terms - bias_terms <= 1) & (dsp_terms == 1) & (ii == 1)
    ff += int((~in_dsp).sum()) * wr
    if shared or ii > 1:
        ff += accumulators * wa + instances * (wx + wt.width)
    ff = math.ceil(c.ff_scale * ff)

    bram = 0
    if weights_in_memory:
        width = math.ceil(n_in * n_out / rf) * wt.width
        bram = _bram18(width, rf, c.bram18_shapes)
        detail["weight_memory"] = {"depth": rf, "width_bits": width}

    p = _positions(node)
    ii_total = ii * p
    latency += (p - 1) * ii
    detail.update(adders=adders, lut_split={"multipliers": lut_mult, "adders": lut_add, "muxes": lut_mux},
                  adder_levels=levels, path_ns=round(path_ns, 3), lut_per_dsp=lut_per_dsp, ii=ii)
    lut = math.ceil(c.lut_scale * (lut_mult + lut_add + lut_mux))
    return LayerEstimate(node.name, "dense", lut, ff, dsp, bram, 0, latency, ii_total, detail)


def _conv2d(node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str],
            live: np.ndarray | None = None) -> LayerEstimate:
    """hls4ml's conv2d: one im2col dense unit (see the module docstring) used once per output
    pixel (io_parallel) or once per input pixel (io_stream line buffers)."""
    c = ctx.c
    w = np.asarray(node.params["weight"])
    kh, kw, ch, f = w.shape
    unit = dataclasses.replace(node, op="dense", shape=(f,), params={**node.params, "weight": w.reshape(-1, f)})
    row = _dense(unit, src, rf, ctx, widths, warnings, live)
    # the pixel loop is pipelined at II = R whatever the multipliers need (PIPELINE II=reuse_factor)
    ii_unit = max(row.detail["ii"], row.detail["reuse_factor"])
    wx = widths[src.name]["result"].width
    n_in = kh * kw * ch
    lut, ff, bram = row.lut, row.ff, row.bram18
    detail = {**row.detail, "kernel": [kh, kw], "channels": ch, "filters": f}
    if ctx.io_type == "io_stream":
        h, wdt = src.shape[0], src.shape[1]
        pixels = h * wdt
        depth = wdt
        lines = max(kh - 1, 0) * ch * wx  # shift registers, one bit wide each, W deep
        if lines and depth > c.line_buffer_srl_max_depth:
            bram += _bram18(lines, depth, c.bram18_shapes)
            line_lut = 0
        else:
            line_lut = lines * math.ceil(depth / c.srl_bits_per_lut)
        lut += line_lut
        ff += n_in * wx  # the window
        ii = pixels * ii_unit
        latency = ii + row.latency
        detail.update(pixels_in=pixels, line_buffer_bits=lines * depth, line_buffer_lut=line_lut)
    else:
        p = int(np.prod(node.shape[:-1]))
        mux = n_in * wx * math.ceil((p - 1) / (c.mux_inputs_per_lut - 1)) if p > 1 else 0
        lut += mux
        ff += n_in * wx if p > 1 else 0
        ii = p * ii_unit
        latency = row.latency + (p - 1) * ii_unit
        detail.update(positions=p, im2col_mux=mux)
    return LayerEstimate(node.name, "conv2d", math.ceil(lut), ff, row.dsp, bram, 0, latency, ii, detail)


def _maxpool2d(node: Node, src: Node, ctx: _Context, widths) -> LayerEstimate:
    """Max pooling: comparators and selects of the input width, no DSP (see the module docstring)."""
    c = ctx.c
    (ph, pw) = node.attrs["pool"]
    ch = int(node.shape[-1])
    wx = widths[src.name]["result"].width
    per_window = ph * pw - 1
    per_comparator = wx * (c.lut_per_compare_bit + c.lut_per_cast_bit)  # compare + 2:1 select
    levels = math.ceil(math.log2(ph * pw)) if ph * pw > 1 else 0
    compare = ctx.cycles(levels * ctx.ns("compare"))
    bram, line_lut = 0, 0
    if ctx.io_type == "io_stream":
        h, wdt = src.shape[0], src.shape[1]
        pixels = h * wdt
        comparators = ch * per_window
        lines = max(ph - 1, 0) * ch * wx
        if lines and wdt > c.line_buffer_srl_max_depth:
            bram = _bram18(lines, wdt, c.bram18_shapes)
        else:
            line_lut = lines * math.ceil(wdt / c.srl_bits_per_lut)
        ff = ph * pw * ch * wx  # the window
        ii = pixels
        latency = pixels + compare
    else:
        comparators = int(np.prod(node.shape)) * per_window
        latency = compare + ctx.boundary
        ff = int(np.prod(node.shape)) * wx if ctx.boundary else 0
        ii = 1
    lut = math.ceil(comparators * per_comparator) + line_lut
    detail = {"pool": [ph, pw], "strides": list(node.attrs["strides"]), "channels": ch, "comparators": comparators,
              "compare_levels": levels, "input_bits": wx, "line_buffer_lut": line_lut}
    return LayerEstimate(node.name, "maxpool2d", lut, ff, 0, bram, 0, latency, ii, detail)


def _flatten(node: Node, src: Node, ctx: _Context) -> LayerEstimate:
    """A reshape: wires in io_parallel; io_stream repacks one input pixel per cycle."""
    pixels = int(np.prod(src.shape[:-1]))
    latency = pixels if ctx.io_type == "io_stream" else 0
    return LayerEstimate(node.name, "flatten", 0, 0, 0, 0, 0, latency, max(1, latency), {"elements": int(np.prod(node.shape))})


def _threshold(node: Node, src: Node, ctx: _Context, widths) -> LayerEstimate:
    c = ctx.c
    t = np.asarray(node.params["thresholds"], dtype=np.int64)
    lo = src.type.codes(np.broadcast_to(src.lo, (t.shape[0],)))
    hi = src.type.codes(np.broadcast_to(src.hi, (t.shape[0],)))
    live = [int(np.unique(row[(row > l) & (row <= h)]).size) for row, l, h in zip(t, lo, hi)]
    wi, wo = widths[src.name]["result"].width, widths[node.name]["result"].width
    pixels = _positions(node)
    stream = ctx.io_type == "io_stream" and pixels > 1  # one pixel per cycle through C units
    p = 1 if stream else pixels
    comparators = p * sum(live)
    lut_cmp = math.ceil(c.lut_per_compare_bit * comparators * wi)
    lut_mux = p * sum(wo * math.ceil(k / c.level_mux_inputs_per_lut) for k in live if k >= 2)
    ff = p * t.shape[0] * wo
    ns = ctx.ns("compare") + (ctx.ns("add") if any(k >= 2 for k in live) else 0.0)
    latency = max(1, ctx.cycles(ns)) + (pixels - 1 if stream else 0)
    detail = {"channels": t.shape[0], "thresholds_per_channel": t.shape[1], "live_comparators": comparators,
              "input_bits": wi, "output_bits": wo}
    return LayerEstimate(node.name, "threshold", lut_cmp + lut_mux, ff, 0, 0, 0, latency,
                         pixels if stream else 1, detail)


def _cast(node: Node, src: Node, ctx: _Context, widths, live: np.ndarray | None = None) -> LayerEstimate:
    """A fixed-point conversion (optionally after relu), elementwise: per output bit a LUT
    that selects it (zero for a negative input under relu, the saturation value on
    overflow); rounding modes other than truncation add an incrementer; saturation compares
    the dropped high bits. hls4ml runs it as its own activation function: ``cast_cycles``."""
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
    # an hls4ml activation function: chained into its neighbours by Vivado HLS, a pipelined
    # function with registered outputs (the tool's layer boundary) in Vitis HLS
    latency = ctx.boundary
    ff = n * to.width if latency else 0
    if stream:
        latency += pixels - 1
    detail = {"elements": n, "input_bits": ti.width, "output_bits": to.width, "relu": relu,
              "rounds": rounds, "saturates": saturates}
    return LayerEstimate(node.name, "cast", lut, ff, 0, 0, 0, latency, pixels if stream else 1, detail)


def _stream(row: LayerEstimate, node: Node | None, ctx: _Context, widths, bits: int = 0) -> LayerEstimate:
    """io_stream: each node's output goes through a FIFO (depth 1 for io_parallel-shaped
    dense outputs, in registers) and the node reads and writes its stream: a cycle each.
    hls4ml's dense(stream) reads all inputs, runs the dense and writes all outputs in sequence
    (only the dense inside is pipelined), so its II is its whole latency."""
    if ctx.io_type != "io_stream":
        return row
    fifo = int(np.prod(node.shape)) * widths[node.name]["result"].width if node is not None else bits
    latency = row.latency + ctx.c.stream_cycles
    ii = row.ii
    arrays = 0
    if row.op == "dense":
        latency += ctx.c.stream_dense_overhead_cycles
        ii = max(ii, latency)
        # dense(stream) copies its input stream into a completely partitioned data[n_in] array
        # (DataPrepare loop), runs the dense on it and keeps res[n_out] until the ResWrite loop
        # has written it out: both arrays live across the process's sequential phases, so they
        # are registers (n_in * Wx + n_out * Wr bits) besides the dense's own pipeline registers
        arrays = row.detail["n_in"] * row.detail["input_bits"] + row.detail["n_out"] * row.detail["result_bits"]
    return dataclasses.replace(row, ff=row.ff + fifo + arrays, latency=latency, ii=ii,
                               detail={**row.detail, "stream_fifo_bits": fifo, "stream_array_bits": arrays})


def _softmax(n: int, wi: int, wr: int, ctx: _Context, implementation: str) -> LayerEstimate:
    """hls4ml's softmax over ``n`` values of ``wi`` bits (nnet_activation.h, 1.3.0):

    * ``stable`` (hls4ml's default): the maximum by a tree of ``n - 1`` compare-and-select
      units, ``n`` subtractions ``x_max - x_i``; ``latency`` skips both.
    * ``exp`` from a table of ``softmax_table_size`` entries of ``softmax_table_bits`` bits
      (indexed by the top 10 bits: a slice, no logic); a ROM has two read ports, so ``n``
      parallel reads replicate it ``ceil(n/2)`` times (one 1Kx18 BRAM18 each).
    * the sum by a tree of ``n - 1`` adders of ``softmax_table_bits`` bits, ``1/sum`` from a
      second table (one BRAM18), then ``n`` products ``exp_i * inv`` of 18x18 bits (a DSP each,
      or a LUT multiplier when multipliers are forced to fabric).
    * latency: the tool's layer boundary, two table reads (``rom`` cycles each), the cycles
      beyond the first of the logic before each read (max tree and subtraction; sum tree), and
      the multiply. Registers: every internal cycle boundary holds ``n`` table-width values,
      plus the ``n`` outputs. II 1.
    """
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
    dsp = n * int(_dsp_slices(np.array([tb]), np.array([tb]), ctx.board.dsp_ports)[0]) if use_dsp else 0
    if not use_dsp:
        lut += n * c.lut_per_mult_bit2 * tb * tb
    mult_ns = ctx.ns("dsp_mult") if use_dsp else ctx.ns("lut_mult")
    rom_each = _bram18(tb, c.softmax_table_size, c.bram18_shapes)
    bram = (math.ceil(n / 2) + 1) * rom_each
    latency = (ctx.boundary + 2 * ctx.rom + ctx.extra_cycles(pre_ns) + ctx.extra_cycles(levels * ctx.ns("add"))
               + max(1, ctx.cycles(mult_ns)))
    ff = max(0, latency - 1) * n * tb + n * wr
    detail = {"n": n, "implementation": implementation, "input_bits": wi, "table_bits": tb,
              "table_size": c.softmax_table_size, "exp_table_copies": math.ceil(n / 2), "adder_levels": levels}
    return LayerEstimate("softmax", "softmax", math.ceil(lut), ff, dsp, bram, 0, latency, 1, detail)


def _pct(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.1f}%"


def _jsonable(value):
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value
