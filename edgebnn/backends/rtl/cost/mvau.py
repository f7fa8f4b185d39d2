"""The MVAU of a weighted node (dense, conv1d, conv2d, depthwise) folded PE x SIMD, as
``ops/_units.mvau`` writes it, and the window generator in front of a convolution.

Registers (from the Verilog): the input beat three times (the skid buffer's two and ``x``), SIMD inputs
per cycle (``b_x``; the weight word's ``b_w`` is absorbed into the ROM), PE accumulators of ``aw`` bits, the
result beat (``res``, kept only when there is more than one PE fold) and the output beat
(``out_r``), and the fold counters. LUTs: per product a share of a popcount (XNOR modes) or an
add/subtract per input bit (add/subtract modes), the accumulators, the result's write
multiplexer over the PE folds, the input's select over the SIMD folds, the weight ROM in LUTs
when it is small (block RAM above ``BLOCK_ROM_BITS``), and the control; each term's LUTs per
unit is a coefficient fitted to Yosys (``bench/rtl_cost_validate.py --refit``).
"""

from __future__ import annotations

import math

import numpy as np

from ....graph.ops._weighted import feature_bounds
from ..folding import default_fold
from ..hdl import signed_bits
from ..ops._units import BLOCK_ROM_BITS, weight_mode

LUT_TERMS = ("prod", "res", "rest", "acc", "cast")
# LUTs per unit of each term (fitted by bench/rtl_cost_validate.py --refit: non-negative least
# squares of the relative error on its fit set, Yosys 0.23 synth_xilinx -abc9): per product of
# an XNOR popcount, per product and input bit of an add/subtract chain (the ternary and
# multiplier modes, with no unit in the fit set, take the add/subtract figure), per result bit
# and level of the result's write multiplexer, per bit of the input select and ROM, per
# accumulator bit, per bit of each PE's output conversion
LUT_COEF = {"prod_xnor": 0.958, "prod_addsub": 1.847, "res": 0.384, "rest": 1.609, "acc": 3.66, "cast": 0.732}
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
    aw = signed_bits(-bound, bound) + 1
    word_bits, depth = pe * simd * wb, nf * sf
    block = word_bits * depth > BLOCK_ROM_BITS
    per_product = {"xnor": 1, "pm1": 2, "addsub": iw, "tern": iw, "mul": iw * wb}[mode]
    xbits = 1 if mode == "xnor" else iw  # a sign's codes have a constant low bit
    return {
        "mode": mode,
        "n": n, "m": m, "pe": pe, "simd": simd, "nf": nf, "sf": sf,
        "iw": iw, "ow": ow, "wb": wb, "aw": aw, "word_bits": word_bits, "depth": depth, "block": block,
        "prod": pe * simd * per_product,
        # the result beat written one PE fold at a time: a multiplexer level per bit of the fold index
        "res": m * ow * _clog2(nf) if nf > 1 else 0,
        # the input select over SIMD folds and the weight ROM in LUTs
        "rest": xbits * simd * (sf - 1) + (0 if block or depth == 1 else word_bits * math.ceil(depth / 64)),
        # the accumulators and their first-fold select (only when SIMD is folded)
        "acc": pe * aw if sf > 1 else 0,
        "cast": pe * ow,
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


def cost(graph, node, fold) -> dict[str, float]:
    f = features(graph, node, fold)
    per_product = LUT_COEF["prod_xnor" if f["mode"] in ("xnor", "pm1") else "prod_addsub"]
    lut = per_product * f["prod"] + sum(LUT_COEF[k] * f[k] for k in LUT_TERMS[1:])
    counters = 2 * _clog2(f["nf"]) + 2 * _clog2(f["sf"]) + _clog2(f["depth"]) + 8
    # a sign's codes (-1, +1) have a constant low bit, which synthesis drops from every register
    iw = 1 if f["mode"] == "xnor" else f["iw"]
    ff = (
        # the weight word's register is absorbed: into the block RAM, or by synthesis moving it
        # onto the ROM's (registered) address
        3 * f["n"] * iw + f["simd"] * iw
        + (f["pe"] * f["aw"] if f["sf"] > 1 else 0)  # with one SIMD fold the accumulator is never read
        + (f["m"] * f["ow"] if f["nf"] > 1 else 0) + f["m"] * f["ow"] + counters
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
