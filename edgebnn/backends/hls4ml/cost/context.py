"""What every hls4ml cost function is given: the model's constants and the build's context.

:data:`CONSTANTS` (a :class:`ModelConstants`) holds every number of the cost model, nowhere
else: round figures from the sources named beside each field (UG474/UG574 for LUTs and carry
chains, UG473/UG573 for RAMB18 shapes, DS255 for LUT multipliers, hls4ml 1.3.0's templates)
and from a look at ``shared/reference/hls4ml_synthesis_results.csv``, not fitted to it
(``bench/validate_estimates.py`` checks them against it). Trust the direction of a change more
than any absolute number.

:class:`_Context` is one build: board, strategy, io_type, clock, multiplier binding and HLS
tool, with the timing rules every op uses (and a memo of the work that does not depend on the
reuse factor, :meth:`_Context.memoized`, which ``fit`` shares across its candidates):

* ``T``, the usable period (:attr:`_Context.usable_ns`), is the clock period less hls4ml's
  12.5 % clock uncertainty (``clock_uncertainty``).
* ``hls_tool`` selects the operator timing ``ModelConstants.timing_ns[tool][dsp_type]`` (ns of
  one adder level, a DSP multiply, a LUT multiply, a comparator, an hls4ml layer boundary, and
  the cycles of a table read). Vivado HLS (up to 2020.1) chains hls4ml's layers inside the top
  pipeline: a layer boundary is 0 cycles. Vitis HLS (2020.2 and later, the default) on 7-series
  parts (DSP48E1) keeps every layer function a pipeline with registered I/O
  (:attr:`_Context.boundary` cycles per layer) and assumes slower operators; on UltraScale+
  parts (DSP48E2) its layers chain as Vivado HLS's do. The ns figures are round numbers chosen
  so the CSV's Vivado HLS 2019.2/2020.1 (5 and 25 ns), Vitis HLS 2021.1 (3.33 and 5 ns, 7-series)
  and Vitis HLS 2022.2-2024.1 (5 ns, UltraScale+) designs come out right on average, not fitted
  per row.
* A multiply that fits ``T`` chains with the adders after it: ``ceil((mult + L * add) / T)``
  cycles for ``L`` adder levels. A longer one is a multi-cycle operator ending on a register,
  after which the adders chain ``floor(T / add)`` levels per cycle:
  ``ceil(mult / T) + ceil(L / floor(T / add))`` (:meth:`_Context.datapath_cycles`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from edgebnn.boards import Board
from edgebnn.errors import EdgebnnError

MULTIPLIERS = ("auto", "dsp", "lut")
SOFTMAX_IMPLEMENTATIONS = ("stable", "latency")


class EstimateError(EdgebnnError):
    """An option or a graph the estimator cannot handle."""


@dataclasses.dataclass(frozen=True)
class ModelConstants:
    """Every number of the model, in one place (the sources are named beside each field)."""

    # a product needs no multiplier when an operand has at most this many bits (binary/ternary)
    free_operand_bits: int = 2
    # a product is built in LUTs when either operand has at most this many bits (CSV rows 26/27, 71-73)
    lut_mult_max_bits: int = 6
    # a general multiplier (Resource, R > 1: the weight comes from a memory, so HLS sees no
    # constant to strength-reduce) goes to DSP slices when its wider operand has more than this
    # many bits, else to LUTs, whatever the narrower one: CSV row 135 (8-bit x 8-bit, weights in
    # memory) has no DSP, rows 14-20 (16 x 16) one slice per shared multiplier; 8 is the smallest
    # value row 135 allows (8 to 15 bind every held-back row alike; bench/validate_estimates.py
    # rebuilds row 135 with 9-bit inputs, so only 9 and above empty its 4 estimated DSPs)
    general_mult_lut_max_bits: int = 8
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
    # a weight memory (Resource, R > 1) at most this many words deep is a LUT ROM, not BRAM
    # (CSV rows 16, 19: R = 3-9 took no BRAM after synthesis; rows 14, 20: 32-72 words did)
    rom_lut_max_depth: int = 16
    # io_stream FIFOs (hls::stream, as deep as the tensor's positions): registers up to this
    # depth, SRL32 shift registers up to the next, BRAM18 deeper (blocks._fifo)
    stream_fifo_register_depth: int = 2
    stream_fifo_srl_max_depth: int = 128
    # io_stream conv2d, Resource strategy: the reuse loop (R iterations, weights from memory)
    # runs once per pixel and its pipeline drains before the next pixel starts, so a pixel costs
    # R plus this many cycles (CSV rows 16, 19, 14: R = 3, 9, 36 took 12, 18, 43 cycles a pixel)
    stream_resource_pixel_cycles: int = 8
    # io_stream conv2d, Latency strategy with R > 1: the pixel loop's interval is the shared
    # multipliers' interval plus this many cycles (CSV rows 2, 10: 13 and 6 cycles a pixel for
    # multiplier intervals of 12 and 5)
    stream_latency_pixel_cycles: int = 1
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
    # io_stream 2-D windows (conv2d and pooling, nnet_conv_stream.h / nnet_pooling_stream.h): the
    # pixel and stride counters pX, pY, sX, sY are C ints, each an increment, a wrap select and
    # its compares; HLS's expression tables of CSV rows 19/20 list four 32-bit adders, two
    # 32-bit selects and about six 32-bit compares per such layer
    stream_window_counters: int = 4
    stream_counter_bits: int = 32
    # io_parallel DATAFLOW (hls4ml 1.3's SetPipelineStyle picks it for a convolution of more
    # than one output position or any Resource layer, blocks._dataflow): every element of a
    # completely partitioned array between two layer functions is a scalar channel, a FIFO of
    # the HLS tool's default depth (Vitis HLS config_dataflow -fifo_depth: 2) whose words
    # (SRL_SIG[2] in the generated fifo_w<W>_d2_S module) stay registers: Vivado maps a shift
    # register to an SRL from 3 stages (synth_design -shreg_min_size 3; blocks._fifo)
    dataflow_channel_depth: int = 2
    # LUTs per bit of a channel's read select (dout = SRL_SIG[addr], a 2:1 mux per bit; a LUT6_2
    # gives two such bits sharing the select)
    dataflow_channel_lut_per_bit: float = 0.5
    # a channel's control as the generated FIFO module writes it: registers addr (2 bits),
    # mOutPtr (3), full_n and empty_n, and the top level's ap_sync_reg_channel_write (1): 8 FFs;
    # their next-state logic (addr and mOutPtr up/down, the two flags, push and pop, the
    # channel-done and-or): about one LUT per register and two for the handshakes, 10 LUTs
    dataflow_channel_control_ff: int = 8
    dataflow_channel_control_lut: int = 10
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
    # library (the CSV's Vitis HLS 2021.1 designs, all on a DSP48E1 part, take about 3x the
    # cycles of Vivado HLS ones). On DSP48E2 parts the Vitis operators and layer chaining are
    # Vivado HLS's: in the CSV's Vitis HLS 2022.2 and 2024.1 UltraScale+ builds (rows 103, 105,
    # 108, 110, 114) a dense layer's call takes its datapath's cycles (instance latency 1 or 0,
    # one cycle more in the top), a relu 0 cycles (it chains into its neighbours) and a 64-input
    # dense layer at 5 ns two cycles, so a layer adds no boundary of its own there. The CSV's
    # Vitis rows on 7-series parts are all 2021.1, its UltraScale+ ones all 2022.2 or later: the
    # device and the tool version are not told apart by these rows.
    timing_ns: Mapping = dataclasses.field(
        default_factory=lambda: {
            "vivado_hls": {
                "DSP48E1": {"add": 1.2, "dsp_mult": 4.5, "lut_mult": 2.5, "compare": 1.2, "layer": 0.0, "rom": 1},
                "DSP48E2": {"add": 0.8, "dsp_mult": 2.0, "lut_mult": 1.8, "compare": 0.8, "layer": 0.0, "rom": 1},
            },
            "vitis_hls": {
                "DSP48E1": {"add": 2.0, "dsp_mult": 7.0, "lut_mult": 2.5, "compare": 1.5, "layer": 3.5, "rom": 2},
                "DSP48E2": {"add": 0.8, "dsp_mult": 2.0, "lut_mult": 1.8, "compare": 0.8, "layer": 0.0, "rom": 2},
            },
        }
    )


CONSTANTS = ModelConstants()


@dataclasses.dataclass(frozen=True)
class _Context:
    """One build: the board, hls4ml's strategy and io_type, the clock period in ns, the
    constants, how multipliers are bound (``"auto"``, ``"dsp"``, ``"lut"``) and the HLS tool
    family (``"vitis_hls"`` or ``"vivado_hls"``)."""

    board: Board
    strategy: str
    io_type: str
    clock: float
    c: ModelConstants
    multipliers: str = "auto"
    hls_tool: str = "vitis_hls"
    # work that does not depend on the reuse factor, done once per node and kept here (a node's
    # weight statistics, the rows of nodes without weights, the live outputs): a fresh dict for
    # each estimate, one for all the candidates of a fit, whose graph and options stay the same
    memo: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def memoized(self, key, compute):
        """``compute()``, once per ``key`` in this build (:attr:`memo`)."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    @property
    def usable_ns(self) -> float:
        """The usable period ``T``: the clock period less hls4ml's clock uncertainty."""
        return self.clock * (1.0 - self.c.clock_uncertainty)

    def ns(self, what: str) -> float:
        """The tool's time for one operator (``"add"``, ``"dsp_mult"``, ``"lut_mult"``, ...)."""
        return self.c.timing_ns[self.hls_tool][self.board.dsp_type][what]

    def cycles(self, ns: float) -> int:
        """Clock cycles logic of ``ns`` takes (0 for none)."""
        return math.ceil(ns / self.usable_ns) if ns > 0 else 0

    @property
    def boundary(self) -> int:
        """Cycles an hls4ml layer function adds at its boundary (0: chained into its neighbours)."""
        return self.cycles(self.ns("layer"))

    @property
    def rom(self) -> int:
        """Cycles of a table (BRAM ROM) read."""
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
