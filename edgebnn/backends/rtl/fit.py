"""The folding search of the RTL backend: per weighted node the PE x SIMD (divisors of its output
channels and of its inputs per output) for the highest throughput that fits a board.

The units form one pipeline, so the slowest sets the rate: for each candidate rate (cycles per
sample, fastest first) every weighted node takes its cheapest folding that keeps up with it, and
the first rate whose whole design fits ``limit`` of each of the board's resources is the answer.
Costs come from the cost models (:mod:`edgebnn.backends.rtl.cost`), so a search takes seconds,
not a synthesis; the synthesized counts then say how close the models were.
"""

from __future__ import annotations

import dataclasses
import math

from ...boards import load_board
from ...errors import EdgebnnError
from .cost import Cost, node_cost
from .cost.mvau import compare_luts, features, rom_blocks
from .folding import divisors
from .ops import LOWERINGS

# LUT4 logic cells per 6-input LUT of the xc7 models: measured on the folded digits BNN (1,566
# LUT6 with synth_xilinx, 2,879 ICESTORM_LC with synth_ice40 + nextpnr); ECP5's LUT4 slices are
# taken as the iCE40's
LUT_PER_LUT6 = {"xilinx": 1.0, "ice40": 1.85, "ecp5": 1.85}
RESOURCES = ("lut", "ff", "dsp", "bram")


class FitError(EdgebnnError):
    """A folding search edgebnn cannot run (a bad limit, a graph with no weighted node)."""


@dataclasses.dataclass(frozen=True)
class RTLFit:
    """The folding found: ``folding`` (node -> (PE, SIMD)), ``cycles`` (node -> cycles per
    sample), ``cycles_per_sample`` (the slowest node's), the model's ``cost`` of the whole
    design in the board's units and per node, and whether it ``fits`` under ``limit``."""

    board: str
    flow: str
    limit: float
    folding: dict[str, tuple[int, int]]
    cycles: dict[str, int]
    cycles_per_sample: int
    cost: Cost
    per_node: dict[str, Cost]
    capacity: dict[str, int]
    fits: bool
    tried: int

    def utilization(self) -> dict[str, float]:
        return {k: getattr(self.cost, k) / v for k, v in self.capacity.items() if v}

    def __str__(self) -> str:
        use = ", ".join(f"{100 * u:.0f}% {k.upper()}" for k, u in self.utilization().items())
        fold = ", ".join(f"{k} {pe}x{simd}" for k, (pe, simd) in self.folding.items())
        head = "fits" if self.fits else f"nothing fits under {100 * self.limit:g}%; the smallest design the models know needs"
        return f"{self.board}: {head} {use} at {self.cycles_per_sample} cycles per sample (PE x SIMD: {fold})"


def on_board(cost: Cost, flow: str, roms: list[tuple[int, int]]) -> Cost:
    """``cost`` (xc7 units, its block RAM counted as BRAM18) in the units of ``flow``: LUT4s for
    iCE40 and ECP5, and the ROMs ``roms`` (width, depth) in that flow's block RAMs."""
    if flow == "xilinx":
        return cost
    bram = sum(rom_blocks(w, d, flow) for w, d in roms)
    return dataclasses.replace(cost, lut=math.ceil(cost.lut * LUT_PER_LUT6[flow]), bram=bram)


def _interval(graph, node, pe: int, simd: int) -> int:
    """Cycles per sample of a weighted node's unit at (pe, simd), as the lowering builds it."""
    outputs, inputs = LOWERINGS[node.op].fold_sizes(node, graph.sources(node))
    folds = (outputs // pe) * (inputs // simd)
    if node.op == "dense":
        return math.prod(node.shape[:-1]) * folds
    src = graph.sources(node)[0]
    frame = math.prod(src.shape[:-1])
    return max(frame, math.prod(node.shape[:-1]) * folds) + 1  # input and windows overlap in the line buffer


def _on_board(graph, node, pe: int, simd: int, flow: str) -> Cost:
    """A weighted node's cost at (pe, simd) in ``flow``'s units. On iCE40 its LUTs count the
    logic cells of its built-in threshold's comparisons too: synth_ice40 builds each ``>=`` as a
    carry chain, an SB_CARRY a bit that nextpnr places in a logic cell of its own, which the
    LUT4 count misses (the 5-epoch digits BNN with its last layer at 10 x 1, 310 comparisons of
    10 bits: 3,900 LUT4, modelled 72% of the UP5K, but 2,471 SB_CARRY and 7,677 logic cells
    placed, 145%). A comparison bit is counted as that one logic cell, in place of the LUTs the
    xc7 model gives it (scaled to LUT4s they would count it twice)."""
    f = features(graph, node, (pe, simd))
    cost = node_cost(graph, node, (pe, simd))
    if flow == "ice40":  # the comparisons in logic cells, not as their xc7 LUTs scaled to LUT4s
        cost = dataclasses.replace(cost, lut=max(cost.lut - math.ceil(compare_luts(f) - 0.5), 0))
    cost = on_board(cost, flow, [(f["word_bits"], f["depth"])] if f["block"] else [])
    if flow == "ice40":
        cost = dataclasses.replace(cost, lut=cost.lut + f["cmp"])
    return cost


def unit_on_board(graph, node, fold, flow: str) -> Cost:
    """A node's unit in ``flow``'s units as the fit counts it: a weighted node folded ``fold`` =
    (PE, SIMD) as :func:`_on_board` does, any other node's unit as its cost model gives it
    (``fold`` None). The estimate of an rtl run counts its design the same way."""
    if fold is None:
        return on_board(node_cost(graph, node), flow, [])
    return _on_board(graph, node, *fold, flow)


def fit(graph, board, limit: float = 0.8, flow: str | None = None) -> RTLFit:
    """The highest-throughput folding of ``graph`` whose modelled cost fits ``limit`` of each of
    ``board``'s resources (LUT, FF, DSP, block RAM); see the module docstring."""
    board = load_board(board)
    flow = flow or board.flow
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 < limit <= 1:
        raise FitError(f"limit must be a fraction in (0, 1], got {limit!r}")
    capacity = {"lut": board.lut, "ff": board.ff, "dsp": board.dsp, "bram": board.bram18}
    weighted = [n for n in graph.compute_nodes() if n.op in LOWERINGS and LOWERINGS[n.op].FOLDED]
    if not weighted:
        raise FitError(f"graph {graph.name!r} has no weighted node (dense, convolution) to fold")
    fixed = Cost()
    names = {n.name for n in weighted}
    for node in graph.compute_nodes():
        if node.name not in names:
            fixed = fixed + unit_on_board(graph, node, None, flow)
    floor = max((math.prod(n.shape[:-1]) if n.shape else 1) for n in graph.compute_nodes())
    # per weighted node every folding: (cycles, cost on the board, normalized size, (pe, simd))
    options = {}
    for node in weighted:
        outputs, inputs = LOWERINGS[node.op].fold_sizes(node, graph.sources(node))
        rows = []
        for pe in divisors(outputs):
            for simd in divisors(inputs):
                c = _on_board(graph, node, pe, simd, flow)
                size = sum(getattr(c, k) / max(capacity[k], 1) for k in RESOURCES)
                rows.append((_interval(graph, node, pe, simd), c, size, (pe, simd)))
        options[node.name] = sorted(rows, key=lambda r: (r[2], r[0]))
    rates = sorted({r[0] for rows in options.values() for r in rows if r[0] >= floor} | {floor})
    best, tried = None, 0
    for rate in rates:
        tried += 1
        picked = {name: next((r for r in rows if r[0] <= rate), None) for name, rows in options.items()}
        if any(p is None for p in picked.values()):
            continue
        total = fixed
        for p in picked.values():
            total = total + p[1]
        fits = all(getattr(total, k) <= limit * capacity[k] for k in RESOURCES)
        best = (rate, picked, total, fits)
        if fits:
            break
    rate, picked, total, fits = best
    return RTLFit(
        board=board.name,
        flow=flow,
        limit=float(limit),
        folding={name: p[3] for name, p in picked.items()},
        cycles={name: p[0] for name, p in picked.items()},
        cycles_per_sample=max(floor, *(p[0] for p in picked.values())),
        cost=total,
        per_node={name: p[1] for name, p in picked.items()},
        capacity=capacity,
        fits=fits,
        tried=tried,
    )
