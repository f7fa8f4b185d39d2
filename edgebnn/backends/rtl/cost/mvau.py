"""The MVAU of a weighted node (dense, conv1d, conv2d, depthwise) folded PE x SIMD, as
``ops/_units.mvau`` writes it (with the threshold that is its only reader built in: an MVTU),
and the window generator in front of a convolution.

Registers (from the Verilog): SIMD inputs per cycle (``b_x``; the input beat itself waits in the
upstream unit's register) and the weight word (``b_w``, none in block RAM or for a constant; of a
shallow ROM's equal bit columns one each), PE accumulators of ``aw`` bits, a built-in
threshold's table row, comparisons and levels, the result beat (``res``, a shift register the PE
folds enter in order, kept only when there is more than one) and the output skid buffer's two
beats, and the fold counters. A sign's codes (-1, +1) count one bit: in a whole design synthesis
drops their constant low bit. LUTs: per product a share of a popcount (XNOR modes) or of an
adder tree per input bit (add/subtract modes), the accumulators, the input's select over the
SIMD folds, the weight ROM in LUTs when it is small (block RAM above ``BLOCK_ROM_BITS``, a
constant when it is one word), per PE, fused, its comparators against a threshold table chosen
by the PE fold (the table's distinct bit columns, and the comparators cheaper where there are at
most two PE folds), and the skid buffer's select; each term's LUTs per unit is a coefficient
fitted to Yosys (``bench/rtl_cost_validate.py --refit``), the popcount's or tree's and the
accumulator's one per weight mode.
"""

from __future__ import annotations

import math

import numpy as np

from ....graph.ops._weighted import feature_bounds
from ..folding import default_fold
from ..hdl import signed_bits
from ..ops import fused_reader
from ..ops._units import BLOCK_ROM_BITS, weight_mode

LUT_TERMS = ("prod", "rest", "rom", "acc", "cmp_table", "cmp_few", "table", "out")
# the terms whose LUTs per unit differ by weight mode: an XNOR unit's (one bit per product, its
# accumulate ``acc + SIMD - 2 * hits`` an adder with a constant) or the add/subtract modes' (adder
# trees of multi-bit inputs, each PE subtracting the shared input sum before it accumulates)
MODE_TERMS = ("prod", "acc")
# LUTs per unit of each term (fitted by bench/rtl_cost_validate.py --refit: non-negative least
# squares of the relative error on its fit set, Yosys 0.23 synth_xilinx -abc9), ``<term>_xnor``
# and ``<term>_addsub`` for the terms of MODE_TERMS (the pm1 mode takes the XNOR figure; the
# ternary and multiplier modes, with no unit in the fit set, the add/subtract figure): per
# product of an XNOR popcount, per product and input bit of an adder tree, per input bit
# selected, per distinct ROM column, per accumulator bit, per comparator bit of a built-in
# threshold against its table's registers (more than two PE folds) or against constants or
# one of two rows (at most two), per distinct bit column of that table, per bit of the output
# skid buffer. The rest of the unit (each PE's output conversion, a built-in threshold's level
# pick, the fold counters) grows with these terms in the fit set and rides on them: the sums hold
# for units shaped like the fit set's (binary MLP layers, with sign or multi-level thresholds
# built in or none)
LUT_COEF = {
    "prod_xnor": 0.927, "prod_addsub": 1.228, "rest": 2.666, "rom": 1.793, "acc_xnor": 1.753, "acc_addsub": 4.069,
    "cmp_table": 0.901, "cmp_few": 0.542, "table": 1.332, "out": 1.148,
}  # fmt: skip
# block RAM shapes (depth, width) by flow: RAMB18 and DP16KD (18 Kb), SB_RAM40_4K (4 Kb)
BRAM_SHAPES = {
    "xilinx": ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36)),
    "ecp5": ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36)),
    "ice40": ((2048, 2), (1024, 4), (512, 8), (256, 16)),
}


def matrix(node) -> np.ndarray:
    """The (N, M) weight codes the node's MVAU multiplies (a convolution's kernel as rows of one window)."""
    w = np.asarray(node.params["weight"])
    if node.op == "dense":
        return w
    if node.op == "depthwise_conv2d":
        from ....graph.ops.depthwise_conv2d import full_kernel

        w = full_kernel(w)
    return w.reshape(-1, w.shape[-1])


def features(graph, node, fold) -> dict:
    """The MVAU's sizes and widths, and the value of each term of :data:`LUT_TERMS`."""
    src = graph.sources(node)[0]
    w = matrix(node).astype(np.int64)
    n, m = w.shape
    pe, simd = fold if fold is not None else default_fold(m, n)
    nf, sf = m // pe, n // simd
    lo, hi = feature_bounds(node, src, n)
    padding = node.attrs.get("padding")
    zero_pad = padding is not None and any(np.ravel(padding)) and int(node.attrs["pad_code"]) == 0
    nonzero = src.op == "threshold" and bool(np.isin(src.params["levels"], (-1, 1)).all()) and not zero_pad
    mode = weight_mode(w, float(lo.min(initial=0)), float(hi.max(initial=0)), nonzero)
    t = src.type
    iw, ow = t.width, node.type.width
    wb = {"xnor": 1, "pm1": 1, "addsub": 1, "tern": 2}.get(mode, node.fixed_attr("weight_type").width)
    xmax = max(abs(t.min_code), abs(t.max_code), abs(int(node.attrs.get("pad_code", 0))))
    bound = n if mode in ("xnor", "pm1") else int(np.max(np.abs(w).sum(axis=0), initial=0)) * int(xmax)
    aw = signed_bits(-bound, bound + 1) + 1
    word_bits, depth = pe * simd * wb, nf * sf
    block = depth > 1 and word_bits * depth > BLOCK_ROM_BITS  # one word is a constant, never a ROM
    then = fused_reader(graph, node)
    k, thr_regs = 0, 0
    if then is not None:
        k = then.params["thresholds"].shape[1]
        ow = then.type.width
        levels = np.asarray(then.params["levels"])
        same = bool(np.all(levels == levels[:1]))
        if np.isin(levels, (-1, 1)).all():
            ow = 1  # a sign's codes (-1, +1) have a constant low bit
        # registers: the PE fold's thresholds and, when per channel, levels (loaded from
        # constants: at most 2**NF different bit columns, synthesis keeps each once) and the
        # comparisons twice
        distinct = 1 << min(nf, 30) if nf > 1 else 0
        thr_regs = min(pe * k * aw, distinct) + min(pe * (k + 1) * ow * (not same), distinct) + 2 * pe * k
    per_product = {"xnor": 1, "pm1": 2, "addsub": iw, "tern": iw, "mul": iw * wb}[mode]
    prod_terms = (pe + (mode in ("addsub", "tern"))) * simd
    if depth == 1 and mode == "addsub":
        prod_terms = int(np.sum(w > 0)) + simd  # constant weights: each PE's tree adds only its +1 inputs
    elif depth == 1 and mode == "tern":
        prod_terms = int(np.count_nonzero(w))  # constant weights: the zeros drop out of both trees
    xbits = 1 if mode == "xnor" else iw  # a sign's codes have a constant low bit
    return {
        "mode": mode,
        "n": n, "m": m, "pe": pe, "simd": simd, "nf": nf, "sf": sf,
        "iw": iw, "ow": ow, "wb": wb, "aw": aw, "word_bits": word_bits, "depth": depth, "block": block,
        # per PE a popcount or an adder tree (the add/subtract modes: one more tree, shared by the PEs)
        "prod": prod_terms * per_product,
        # the input select over SIMD folds (a LUT6 selects one of 4, so an input bit costs a LUT
        # per 4 SIMD folds)
        "rest": xbits * simd * (math.ceil(sf / 4) if sf > 1 else 0),
        # the weight ROM in LUTs: a LUT6 holds 64 words of a bit, and a shallow ROM has at most
        # 2**depth different bit columns (synthesis builds each once)
        "rom": 0 if block or depth == 1 else min(word_bits, 1 << min(depth, 30)) * math.ceil(depth / 64),
        # the accumulators and their first-fold select (only when SIMD is folded), with the fold's
        # sum brought to their width before it (SIMD - 2 * hits, or 2 * sum(x where w = +1) - sum(x))
        "acc": pe * aw if sf > 1 else 0,
        # per PE k comparators of the accumulator, against constants (one PE fold) or registers
        # loaded from a table read per PE fold; with at most two PE folds each table bit is a
        # constant or the fold's bit (or its inverse), and the comparison is cheaper
        "cmp": pe * k * aw,
        "cmp_table": pe * k * aw if nf > 2 else 0,
        "cmp_few": pe * k * aw if nf <= 2 else 0,
        # the table's registers loaded from a constant row per PE fold: a LUT per distinct
        # nontrivial bit column (a function of the fold index; at most 2**NF of them, and none
        # over two folds, where every column is a constant or the fold's bit)
        "table": min(pe * k * aw, 1 << min(nf, 30)) * math.ceil(nf / 64) if nf > 2 else 0,
        # the output skid buffer's select
        "out": m * ow,
        "k": k, "fused": then is not None, "thr_regs": thr_regs,
        # the weight word's register (none for block RAM or a constant), its equal bits merged
        "rom_regs": 0 if block or depth == 1 else min(word_bits, 1 << min(depth, 30)),
    }  # fmt: skip


def rom_blocks(width: int, depth: int, flow: str = "xilinx") -> int:
    """Block RAMs of ``flow`` (BRAM18 on Xilinx) for a ``width`` x ``depth`` ROM: the fewest of one shape."""
    return min(math.ceil(width / w) * math.ceil(depth / d) for d, w in BRAM_SHAPES[flow])


def _clog2(n: int) -> int:
    return max(1, math.ceil(math.log2(max(n, 2))))


def window_cost(graph, node) -> dict[str, float]:
    """The window generator of a convolution: a line buffer of kh rows (block RAM when large),
    and a window of kh*kw*C codes assembled and registered."""
    src = graph.sources(node)[0]
    h, w, c = src.shape if len(src.shape) == 3 else (1, *src.shape)
    kernel = np.asarray(node.params["weight"]).shape
    kh, kw = (kernel[0], kernel[1]) if node.op != "conv1d" else (1, kernel[0])
    iw = src.type.width
    beat, frame = c * iw, kh * w
    win = kh * kw * c * iw
    block = beat * frame > BLOCK_ROM_BITS
    return {
        "lut": win * (1 + 0.3 * _clog2(frame)) + (0 if block else beat * math.ceil(frame / 64)),
        "ff": 2 * win + beat + 3 * _clog2(frame) + 16,
        "bram": rom_blocks(beat, frame) if block else 0,
    }


def lut_terms(f: dict) -> dict[str, float]:
    """The value of each coefficient's term (the keys of :data:`LUT_COEF`) for a unit's features."""
    kind = "xnor" if f["mode"] in ("xnor", "pm1") else "addsub"
    out = {}
    for term in LUT_TERMS:
        name = f"{term}_{kind}" if term in MODE_TERMS else term
        out[name] = f[term]
    return out


def compare_luts(f: dict) -> float:
    """The LUTs the model gives a built-in threshold's comparators (of a unit's features)."""
    return LUT_COEF["cmp_table"] * f["cmp_table"] + LUT_COEF["cmp_few"] * f["cmp_few"]


def cost(graph, node, fold) -> dict[str, float]:
    f = features(graph, node, fold)
    lut = sum(LUT_COEF[k] * v for k, v in lut_terms(f).items())
    counters = 2 * _clog2(f["nf"]) + 2 * _clog2(f["sf"]) + _clog2(f["depth"]) + 8
    # a sign's codes (-1, +1) have a constant low bit, which synthesis drops from every register
    iw = 1 if f["mode"] == "xnor" else f["iw"]
    out_bits = f["m"] * f["ow"]
    ff = (
        f["simd"] * iw + f["rom_regs"]  # one fold's inputs and weights
        + f["pe"] * f["aw"]  # the accumulators
        + f["thr_regs"]
        # the result beat's shift register holds the PE folds before the last (the last enters the
        # skid buffer straight from the comparisons), then the output skid buffer's two beats
        + out_bits * (f["nf"] - 1) // f["nf"] + 2 * out_bits
        + counters
    )  # fmt: skip
    carry = f["pe"] * math.ceil(f["aw"] / 4) * (1 + (f["simd"] > 1) * (f["mode"] in ("addsub", "tern")))
    out = {
        "lut": lut,
        "ff": ff,
        "carry": carry,
        "dsp": f["pe"] * f["simd"] if f["mode"] == "mul" and f["iw"] > 4 and f["wb"] > 4 else 0,
        "bram": rom_blocks(f["word_bits"], f["depth"]) if f["block"] else 0,
    }
    if node.op != "dense":
        for k, v in window_cost(graph, node).items():
            out[k] = out.get(k, 0) + v
    return out
