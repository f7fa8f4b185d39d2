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
    # RAMB18 aspect ratios (max depth, port width in bits), UG473 / UG573
    bram18_shapes: tuple = ((512, 36), (1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1))
    # assumed delays (ns) by DSP generation: one adder level, a DSP multiply, a LUT multiply,
    # a comparator
    timing_ns: Mapping = dataclasses.field(default_factory=lambda: {
        "DSP48E1": {"add": 1.2, "dsp_mult": 3.0, "lut_mult": 2.5, "compare": 1.2},
        "DSP48E2": {"add": 0.8, "dsp_mult": 2.0, "lut_mult": 1.8, "compare": 0.8},
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
            "utilization_limit": self.utilization_limit,
            "rows": [r.to_dict() for r in self.rows],
            "totals": self.totals,
            "available": self.available,
            "utilization_percent": {k: (None if math.isinf(v) else v) for k, v in self.utilization.items()},
            "fits": self.fits,
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
            f"reuse factor {rf}, {self.io_type}, clock {self.clock_period_ns:g} ns",
            line(head), rule, *(line(r) for r in body[:-3]), rule, *(line(r) for r in body[-3:]),
            f"fits under {100 * self.utilization_limit:g}% of every resource: {'yes' if self.fits else 'no'}; "
            f"latency {self.latency_cycles} cycles = {self.latency_ns:g} ns, II {self.ii} cycles",
        ]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def estimate(graph, board, strategy: str = "Latency", reuse_factor=1, io_type: str = "io_parallel",
             clock_period: float | None = None, utilization_limit: float = 0.8,
             constants: ModelConstants = CONSTANTS) -> Estimate:
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

    ctx = _Context(board, strategy, io_type, float(clock), constants)
    rows, warnings = [], []
    for node in graph.compute_nodes():
        src = graph[node.inputs[0]]
        if node.op == "dense":
            row = _dense(node, src, rf_of[node.name], ctx, warnings)
        elif node.op == "threshold":
            row = _threshold(node, src, ctx)
        else:
            raise EstimateError(f"graph node {node.name!r}: estimate does not know op {node.op!r} yet")
        rows.append(_stream(row, node, ctx))
    rf_shown = dict(reuse_factor) if isinstance(reuse_factor, Mapping) else int(reuse_factor)
    est = Estimate(graph.name, board, strategy, rf_shown, io_type, float(clock), float(utilization_limit), tuple(rows), ())
    tot = est.totals
    if tot["dsp"] > board.dsp:
        warnings.append(
            f"the design needs {tot['dsp']} DSPs but {board.name} has {board.dsp}; Vivado caps DSP use at the "
            f"device's count and builds the other multipliers from LUTs, so expect more LUTs than estimated"
        )
    return dataclasses.replace(est, warnings=tuple(warnings))


# --------------------------------------------------------------------------- internals


@dataclasses.dataclass(frozen=True)
class _Context:
    board: Board
    strategy: str
    io_type: str
    clock: float
    c: ModelConstants

    @property
    def usable_ns(self) -> float:
        return self.clock * (1.0 - self.c.clock_uncertainty)

    def ns(self, what: str) -> float:
        return self.c.timing_ns[self.board.dsp_type][what]

    def cycles(self, ns: float) -> int:
        return math.ceil(ns / self.usable_ns) if ns > 0 else 0


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
    dense = [n.name for n in graph.compute_nodes() if n.op == "dense"]
    if isinstance(reuse_factor, Mapping):
        unknown = sorted(set(reuse_factor) - set(dense))
        if unknown:
            raise EstimateError(
                f"reuse factor given for {', '.join(map(repr, unknown))}, which is not a dense node of graph "
                f"{graph.name!r}; its dense nodes are {', '.join(dense) or 'none'}"
            )
        return {name: _check_rf(reuse_factor.get(name, 1), f"of node {name!r}") for name in dense}
    rf = _check_rf(reuse_factor, "")
    return {name: rf for name in dense}


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


def _dense(node: Node, src: Node, rf: int, ctx: _Context, warnings: list[str]) -> LayerEstimate:
    c = ctx.c
    w = np.asarray(node.params["weight"], dtype=np.int64)
    wt = node.fixed_attr("weight_type")
    n_in, n_out = w.shape
    wx, wa = src.type.width, node.type.width
    bias = node.params.get("bias")
    bias_terms = (np.asarray(bias) != 0).astype(np.int64) if bias is not None else np.zeros(n_out, np.int64)
    detail: dict[str, Any] = {"n_in": n_in, "n_out": n_out, "input_bits": wx, "weight_bits": wt.width,
                              "accumulator_bits": wa}

    if ctx.strategy == "Resource":
        valid = valid_reuse_factors(n_in, n_out)
        if rf not in valid:
            used = _closest_reuse_factor(valid, rf)
            warnings.append(
                f"node {node.name!r}: reuse factor {rf} is not valid for a {n_in}x{n_out} Resource dense; hls4ml "
                f"uses {used} instead (valid: {', '.join(map(str, valid))}) and so does this estimate"
            )
            detail["reuse_factor_requested"] = rf
            rf = used
    detail["reuse_factor"] = rf
    weights_in_memory = ctx.strategy == "Resource" and rf > 1

    small = wt.width <= c.free_operand_bits or wx <= c.free_operand_bits
    if weights_in_memory:
        # every product exists; its operands are the declared widths
        present = np.ones(w.shape, dtype=bool)
        free = np.full(w.shape, small)
        we = np.full(w.shape, wt.width, dtype=np.int64)
        terms = np.full(n_out, n_in, dtype=np.int64) + (1 if bias is not None else 0)
    else:
        mag = np.abs(w)
        present = mag != 0
        pow2 = present & ((mag & (mag - 1)) == 0)
        free = present & (small | pow2)
        we = _signed_bits(mag, wt.signed)
        terms = present.sum(axis=0) + bias_terms
    real = present & ~free
    dsp_prod = real & (we > c.lut_mult_max_bits) & (wx > c.lut_mult_max_bits)
    lut_prod = real & ~dsp_prod

    slices = int(_dsp_slices(np.full(int(dsp_prod.sum()), wx), we[dsp_prod], ctx.board.dsp_ports).sum())
    if weights_in_memory or rf > 1:
        # a shared multiplier sees a different weight every cycle: a general Wx x we multiplier
        lut_mult_cost = c.lut_per_mult_bit2 * float((wx * we[lut_prod]).sum())
    else:
        # a constant multiplier: one adder of Wx + we bits per extra signed digit of the weight
        digits = _csd_digits(np.abs(w)[lut_prod])
        lut_mult_cost = c.lut_per_adder_bit * float(((digits - 1) * (wx + we[lut_prod])).sum())
    n_products = int(present.sum())
    detail["products"] = {"zero": int((~present).sum()), "free": int(free.sum()),
                          "lut": int(lut_prod.sum()), "dsp": int(dsp_prod.sum())}

    dsp = math.ceil(slices / rf)
    lut_mult = math.ceil(lut_mult_cost / rf)
    instances = math.ceil(n_products / rf)
    lut_mux = instances * wx * math.ceil((rf - 1) / (c.mux_inputs_per_lut - 1)) if rf > 1 else 0

    per_cycle = np.ceil(terms / rf).astype(np.int64)
    term_bits = min(wa, wx + wt.width)
    adders, adder_bits = _adder_tree(per_cycle, term_bits, wa)
    if rf > 1:  # one accumulate adder per output that has terms
        accumulators = int((per_cycle > 0).sum())
        adders, adder_bits = adders + accumulators, adder_bits + accumulators * wa
    # HLS folds one add behind each DSP multiply into the slice's post-adder (UG1399, DSP
    # multi-operation matching), so those first-level adders take no LUTs
    folded = min(math.ceil(int(dsp_prod.sum()) / rf), adders)
    adders -= folded
    adder_bits = max(adder_bits - folded * min(wa, term_bits + 1), 0)
    lut_add = math.ceil(c.lut_per_adder_bit * adder_bits)

    # latency
    if dsp_prod.any():
        mult_cycles = max(1, ctx.cycles(ctx.ns("dsp_mult")))
    elif lut_prod.any():
        mult_cycles = max(1, ctx.cycles(ctx.ns("lut_mult")))
    else:
        mult_cycles = 0
    widest = int(per_cycle.max(initial=0))
    levels = math.ceil(math.log2(widest)) if widest > 1 else 0
    if rf > 1:
        levels += 1
    per_cycle_levels = max(1, math.floor(ctx.usable_ns / ctx.ns("add")))
    tree_cycles = math.ceil(levels / per_cycle_levels)
    latency = (rf - 1) + mult_cycles + tree_cycles + 1
    if weights_in_memory:
        latency += c.bram_read_cycles

    # registers: partial sums alive at each cycle boundary inside the tree, LUT products when the
    # multiply has its own cycle, and the output (plus accumulator) register
    ff = 0
    for level in range(per_cycle_levels, levels, per_cycle_levels):
        ff += int(np.ceil(per_cycle / 2**level).sum()) * min(wa, term_bits + level)
    if mult_cycles:
        ff += math.ceil(float((wx + we[lut_prod]).sum()) / rf)
    ff += n_out * wa * (2 if rf > 1 else 1)

    bram = 0
    if weights_in_memory:
        width = math.ceil(n_in * n_out / rf) * wt.width
        bram = _bram18(width, rf, c.bram18_shapes)
        detail["weight_memory"] = {"depth": rf, "width_bits": width}

    p = _positions(node)
    ii = rf * p
    latency += (p - 1) * rf
    detail.update(adders=adders, lut_split={"multipliers": lut_mult, "adders": lut_add, "muxes": lut_mux},
                  mult_cycles=mult_cycles, adder_levels=levels, levels_per_cycle=per_cycle_levels)
    return LayerEstimate(node.name, "dense", lut_mult + lut_add + lut_mux, ff, dsp, bram, 0, latency, ii, detail)


def _threshold(node: Node, src: Node, ctx: _Context) -> LayerEstimate:
    c = ctx.c
    t = np.asarray(node.params["thresholds"], dtype=np.int64)
    lo = src.type.codes(np.broadcast_to(src.lo, (t.shape[0],)))
    hi = src.type.codes(np.broadcast_to(src.hi, (t.shape[0],)))
    live = [int(np.unique(row[(row > l) & (row <= h)]).size) for row, l, h in zip(t, lo, hi)]
    wi, wo = src.type.width, node.type.width
    p = _positions(node)
    comparators = p * sum(live)
    lut_cmp = math.ceil(c.lut_per_compare_bit * comparators * wi)
    lut_mux = p * sum(wo * math.ceil(k / c.level_mux_inputs_per_lut) for k in live if k >= 2)
    ff = p * t.shape[0] * wo
    ns = ctx.ns("compare") + (ctx.ns("add") if any(k >= 2 for k in live) else 0.0)
    latency = max(1, ctx.cycles(ns))
    detail = {"channels": t.shape[0], "thresholds_per_channel": t.shape[1], "live_comparators": comparators,
              "input_bits": wi, "output_bits": wo}
    return LayerEstimate(node.name, "threshold", lut_cmp + lut_mux, ff, 0, 0, 0, latency, 1, detail)


def _stream(row: LayerEstimate, node: Node, ctx: _Context) -> LayerEstimate:
    if ctx.io_type != "io_stream":
        return row
    fifo = int(np.prod(node.shape)) * node.type.width
    return dataclasses.replace(row, ff=row.ff + fifo, latency=row.latency + 1,
                               detail={**row.detail, "stream_fifo_bits": fifo})


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
