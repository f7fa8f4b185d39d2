"""Cost of a ``dense`` node (``y = x @ W + b``) as hls4ml 1.3.0's io_parallel dense builds it.

Widths: ``Wx`` the input's result width, ``Ww`` the declared weight width, ``Wa`` the
accumulator width and ``Wr`` the result width, from the graph or as ``types=`` overrides them
(an hls4ml design with its default ``ap_fixed<16,6>`` accumulators, products truncated to the
accumulator as hls4ml casts them to ``accum_t``); ``R`` the reuse factor. The sources: hls4ml's
``nnet_dense_latency.h`` / ``nnet_dense_resource.h`` and ``FPGABackend``, Vivado's mapping
(UG474, UG574, UG479, UG579, UG473, UG573, UG1399, DS255) and the rows of
``shared/reference/hls4ml_synthesis_results.csv`` named below.

* Reuse factor. Resource strategy snaps an invalid ``R`` to the nearest valid one exactly as
  hls4ml 1.3.0 does (``FPGABackend.set_closest_reuse_factor``, valid values from
  ``_validate_reuse_factor`` over the whole layer) and says so in ``warnings``. Weights are
  constants in the Latency strategy and in Resource with ``R = 1``; Resource with ``R > 1``
  reads them from a memory.
* Unread outputs. With constant weights, outputs no later node reads (``live``, see
  ``blocks._live_outputs``) are removed with their products, adders and registers (Vivado's
  sweep); hls4ml's ``multiplier_limit`` and the valid reuse factors still count the whole layer.
* Products, constant weights. A zero weight costs nothing. A product needs no multiplier when
  the weight is a power of two (``±1`` included: a shift and a sign; one signed digit) or either
  operand has at most ``free_operand_bits`` bits (binary/ternary codes: a select or an xnor; the
  adder tree is the popcount). A constant with fewer than ``mult_min_csd_digits`` (3) non-zero
  digits in canonical signed-digit form is shifts and one adder of ``Wx + we`` bits
  (``shift_add``, never shared), not a multiplier. Only the rest are "mul" operations; they use the
  weight's effective width ``we`` (its odd part, trailing zero bits being a free shift, plus a
  sign bit). Weights from memory: every one of the ``n_in*n_out`` products is built at the
  declared width ``Ww`` and zeros save nothing.
* Multiplier kind. A "mul" goes to DSP slices when both operands are wider than
  ``lut_mult_max_bits`` (6): the CSV shows ``ap_fixed<6,1>`` weights times 16-bit inputs in
  LUTs (rows 26/27: 23 DSPs for about 970 non-zero weights) and ``ap_fixed<8,1>`` weights in
  DSPs (rows 71-73); ``multipliers="dsp"|"lut"`` forces every "mul" into DSPs or fabric (as
  ``config_op mul -impl dsp|fabric`` does). DSP slices per product: ``blocks._dsp_slices``
  (25x18 for DSP48E1, 27x18 for DSP48E2). A LUT constant multiplier of ``d`` signed digits is
  ``d - 1`` adders of ``Wx + we`` bits summing the shifted inputs.
* Sharing (``R > 1``). hls4ml's ``multiplier_limit = ceil(n_in*n_out/R) - floor(zeros/R)``
  (``ceil(n_in*n_out/R)`` with weights in memory) bounds the "mul" instances, so
  ``II = min(R, ceil(muls / limit))`` (the CSV's II is often below ``R``; ``II = R`` with weights
  in memory) and, when the muls exceed the limit (always with weights in memory),
  ``min(muls, limit)`` shared general multipliers of the declared widths are built: of those,
  ``min(instances, ceil(muls / II))`` are DSPs when bound to DSPs (or multipliers are forced
  to DSP), the others LUT multipliers of ``lut_per_mult_bit2 * Wx * Ww`` LUTs (DS255: a
  speed-optimised 9x9 LUT multiplier takes 115 LUTs). The binding of a shared multiplier: with
  constant weights (Latency strategy) HLS still sees the constants behind the mux, so the
  constant rule above holds (DSP when both declared widths exceed ``lut_mult_max_bits``); with
  weights in memory (Resource, ``R > 1``) it is a general multiplier (HLS sees no constant to
  strength-reduce), in DSPs when its wider operand exceeds ``general_mult_lut_max_bits`` (8)
  bits, whatever the narrower one (CSV row 135: 8 x 8 in LUTs; rows 14-20: 16 x 16 in DSPs;
  the held-back rows 143-145 that showed the rule: 6 x 16 and 7 x 16 in DSPs, 7 x 7 in
  LUTs). Each instance gets a mux on its data operand over the ``min(II, n_in)`` inputs it
  can see (hls4ml's reuse loop walks the ``n_in`` inputs again when ``R > n_in``),
  ``Wx * ceil((min(II, n_in)-1)/3)`` LUTs (a LUT6 is a 4:1 mux, UG474: ``mux_inputs_per_lut``),
  and, for constant weights, a small
  ROM of ``Ww * ceil(II/64)`` LUTs (one LUT6 holds 64 one-bit entries).
* Adder tree. Output ``o`` sums ``t_o`` terms (its non-zero products plus a non-zero bias; every
  product plus any bias with weights in memory). With constant weights hls4ml's code is unrolled
  whatever ``II`` is: only the multipliers are shared, each output's whole tree of ``t_o`` terms
  is built (CSV rows 2, 5, 7, 10: the Latency-strategy R = 16 CNNs had about twice the LUTs and
  FFs of a tree over one cycle's terms). With weights in memory the reuse loop sums
  ``ceil(t_o/II)`` terms a cycle into an accumulator. Either tree is balanced
  (``blocks._adder_tree``): level ``l`` is ``min(Wa, Wt + l)`` bits wide with
  ``Wt = min(Wa, Wx + Ww)`` the product width of the declared types (ap_fixed's product rule;
  a binary weight times a wide input still counts ``Wx + 2``-bit terms, its exact width being
  ``Wx + 1``). With ``II > 1`` one more ``Wa``-bit adder per output summed over cycles
  accumulates. One first-level adder per DSP is folded into the slice's post-adder (HLS
  multiply-add matching, UG1399). Each adder costs ``lut_per_adder_bit`` LUTs per bit (one LUT
  and one carry bit per sum bit, UG474/UG574).
* Latency (cycles, the HLS report's measure): the tool's layer boundary ``+ (II - 1)`` + the
  datapath + ``dense_extra_cycles`` (0), plus ``bram_read_cycles`` with weights in memory.
  The datapath is the slowest multiplier present (``dsp_mult`` when there are DSPs, else
  ``lut_mult`` when there are LUT multipliers or shift-adds, else none) followed by
  ``L = ceil(log2(max ceil(t_o/II)))`` adder levels (one more when ``II > 1``: the earlier
  cycles' levels ran while later products were made, so one cycle's terms and one add remain),
  in cycles by ``_Context.datapath_cycles`` (a multiply that fits the period chains with the
  adders, a longer one ends on a register).
* FF. At each internal cycle boundary of the datapath the partial sums alive there (as wide as
  that level's adders); every output not held in a DSP's output register (an output that is
  one DSP product, plus a bias in its post-adder, at ``II = 1`` with constant weights) in
  ``Wr`` fabric bits; with sharing the ``Wa``-bit accumulators and each instance's operands
  (``Wx + Ww`` bits), and with constant weights every shared product but each output's last,
  which wait for the tree (``min(Wa, Wx + Ww)`` bits each).
* BRAM18 (weights in memory): hls4ml maps the weights to ``ROM_nP_BRAM`` reshaped into
  ``ceil(n_in*n_out/R)`` weights per word, a memory ``R`` words deep and
  ``ceil(n_in*n_out/R) * Ww`` bits wide (``blocks._bram18``). A memory at most
  ``rom_lut_max_depth`` words deep Vivado builds as distributed ROM instead, one LUT per bit
  per 64 words (CSV rows 16 and 19: HLS reported 80 and 45 BRAM18 for R = 3-9, Vivado used
  only the 8 of the FIFOs).
* DSP cap (``blocks._cap_dsp``): the row's ``lut_per_dsp`` is what one DSP costs when Vivado
  rebuilds it in fabric. A constant multiplier HLS bound to a DSP "mul" core was not
  strength-reduced, so Vivado's LUT multiplier keeps one partial product per ``1`` bit of the
  constant's binary magnitude (``popcount - 1`` adders of ``Wx + we`` bits, not the
  signed-digit count), and the tree adder folded into the slice's post-adder moves to fabric
  with it; a shared general multiplier costs its ``lut_per_mult_bit2 * Wx * Ww`` LUTs.
* A node with more than one position (shape rank > 1) is one dense unit used once per
  position: latency ``+ (positions - 1) * II`` and II times the positions.
* ``lut_scale`` and ``ff_scale`` multiply the LUT and FF totals (1.0: the formulas as written).

What does not depend on the reuse factor (the products' kinds, widths and counts, each output's
terms, the valid reuse factors) is computed once per node and build (:func:`_products`, kept in
``_Context.memo``), so ``fit`` pays for the weights once, not once per reuse factor it tries.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from edgebnn.graph import Node

from .blocks import (
    _adder_tree,
    _bram18,
    _closest_reuse_factor,
    _csd_digits,
    _dsp_slices,
    _popcount,
    _positions,
    _signed_bits,
    valid_reuse_factors,
)
from .context import _Context
from .row import LayerEstimate


@dataclasses.dataclass(frozen=True)
class _Products:
    """What a dense node's weights give whatever the reuse factor: the (live) shape, the
    products by kind, each output's terms, and the unshared multipliers' DSPs and LUTs."""

    n_in: int
    n_out: int
    n_dead: int
    zeros_full: int  # zero weights of the whole layer (hls4ml's multiplier_limit counts them)
    bias_terms: np.ndarray  # per output: 1 for a non-zero bias
    terms: np.ndarray  # per output: the adder tree's inputs
    n_real: int  # "mul" operations
    products: dict
    dsp_terms: np.ndarray  # per output: its DSP products (zeros with weights in memory)
    dsp: int  # DSP slices of the unshared DSP products
    lut_mult: float  # LUTs of the unshared LUT multipliers
    lut_moved: float  # LUTs of the unshared DSP products rebuilt in fabric (with the DSP cap)
    lut_shift: float  # LUTs of the shift-adds


def _products(node: Node, wx: int, wt, ctx: _Context, live, trim: bool, weights_in_memory: bool) -> _Products:
    """The reuse-factor-independent part of the rules in the module docstring: the weights
    (``trim``: without the outputs ``live`` leaves out) as constants or, ``weights_in_memory``,
    every product a general multiplier of the declared widths."""
    c = ctx.c
    w = np.asarray(node.params["weight"], dtype=np.int64)
    bias = node.params.get("bias")
    n_dead = 0
    zeros_full = int((w == 0).sum())  # hls4ml's multiplier_limit counts the whole layer
    if trim:
        # outputs no later node reads: Vivado removes their products and adders
        n_dead = int((~live).sum())
        w = w[:, live]
        bias = None if bias is None else np.asarray(bias)[live]
    n_in, n_out = w.shape
    bias_terms = (np.asarray(bias) != 0).astype(np.int64) if bias is not None else np.zeros(n_out, np.int64)
    small = wt.width <= c.free_operand_bits or wx <= c.free_operand_bits
    if weights_in_memory:
        # every product exists and is a general multiplier of the declared widths: the same for
        # all of them (no per-weight arrays needed)
        n = n_in * n_out
        real = not small  # "mul" operations
        wide = max(wt.width, wx) > c.general_mult_lut_max_bits
        dsp_prod = real if ctx.multipliers == "dsp" else False if ctx.multipliers == "lut" else real and wide
        lut_prod = real and not dsp_prod
        terms = np.full(n_out, n_in, dtype=np.int64) + (1 if bias is not None else 0)
        products = {"zero": 0, "free": n if small else 0, "shift_add": 0, "lut": n * lut_prod, "dsp": n * dsp_prod}
        return _Products(
            n_in, n_out, n_dead, zeros_full, bias_terms, terms, n * real, products, np.zeros(n_out, np.int64), 0, 0.0, 0.0, 0.0
        )
    # constant weights: HLS turns a product with few signed digits into shifts and adds
    mag = np.abs(w)
    present = mag != 0
    digits = _csd_digits(mag)
    free = present & (small | (digits <= 1))
    shift_add = present & ~free & (digits < c.mult_min_csd_digits)
    we = _signed_bits(mag, wt.signed)
    terms = present.sum(axis=0) + bias_terms
    real = present & ~free & ~shift_add  # "mul" operations
    wide = (we > c.lut_mult_max_bits) & (wx > c.lut_mult_max_bits)
    if ctx.multipliers == "dsp":
        dsp_prod = real
    elif ctx.multipliers == "lut":
        dsp_prod = np.zeros_like(real)
    else:
        dsp_prod = real & wide
    lut_prod = real & ~dsp_prod
    products = {
        "zero": int((~present).sum()),
        "free": int(free.sum()),
        "shift_add": int(shift_add.sum()),
        "lut": int(lut_prod.sum()),
        "dsp": int(dsp_prod.sum()),
    }
    # unshared: one multiplier per product
    wx_arr = np.full(int(dsp_prod.sum()), wx)
    dsp = int(_dsp_slices(wx_arr, we[dsp_prod], ctx.board.dsp_ports).sum())
    lut_mult = c.lut_per_adder_bit * float(((np.maximum(digits[lut_prod], 2) - 1) * (wx + we[lut_prod])).sum())
    # the same constant products built from LUTs if Vivado runs out of DSPs: HLS bound them
    # to a DSP "mul" core, so no strength reduction happened; Vivado's generic LUT multiplier
    # keeps, after constant propagation, one partial product per '1' bit of the constant
    # (binary, not recoded to signed digits): popcount - 1 adders of Wx + we bits
    ones = _popcount(mag[dsp_prod])
    lut_moved = c.lut_per_adder_bit * float(((np.maximum(ones, 2) - 1) * (wx + we[dsp_prod])).sum())
    lut_shift = c.lut_per_adder_bit * float((wx + we[shift_add]).sum())  # one adder each, never shared
    return _Products(
        n_in,
        n_out,
        n_dead,
        zeros_full,
        bias_terms,
        terms,
        int(real.sum()),
        products,
        dsp_prod.sum(axis=0),
        dsp,
        lut_mult,
        lut_moved,
        lut_shift,
    )


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a dense node (the rules in the module docstring); ``live`` masks the outputs
    some later node reads (None: all)."""
    c = ctx.c
    wt = widths[node.name]["weight"]
    n_in, n_out_full = node.params["weight"].shape
    trim = live is not None and not (ctx.strategy == "Resource" and rf > 1) and not live.all()
    wx = widths[src.name]["result"].width
    wa = widths[node.name]["accum"].width
    wr = widths[node.name]["result"].width
    requested = rf
    if ctx.strategy == "Resource":
        valid = ctx.memoized(("valid_reuse_factors", n_in, n_out_full), lambda: valid_reuse_factors(n_in, n_out_full))
        if rf not in valid:
            used = _closest_reuse_factor(valid, rf)
            warnings.append(
                f"node {node.name!r}: reuse factor {rf} is not valid for a {n_in}x{n_out_full} Resource dense; hls4ml "
                f"uses {used} instead (valid: {', '.join(map(str, valid))}) and so does this estimate"
            )
            rf = used
    weights_in_memory = ctx.strategy == "Resource" and rf > 1
    key = ("dense", node.name, weights_in_memory, live.tobytes() if trim else None)
    s = ctx.memoized(key, lambda: _products(node, wx, wt, ctx, live, trim, weights_in_memory))
    n_out = s.n_out
    detail: dict[str, Any] = {
        "n_in": n_in,
        "n_out": n_out,
        "input_bits": wx,
        "weight_bits": wt.width,
        "accumulator_bits": wa,
        "result_bits": wr,
        "dead_outputs": s.n_dead,
    }
    if rf != requested:
        detail["reuse_factor_requested"] = requested
    detail["reuse_factor"] = rf
    n_real, terms, bias_terms = s.n_real, s.terms, s.bias_terms
    detail["products"] = dict(s.products)

    # sharing: hls4ml's multiplier_limit bounds the "mul" instances; II follows from it
    if weights_in_memory:
        limit = math.ceil(n_in * n_out / rf)
        ii = rf
    else:
        limit = max(1, math.ceil(n_in * n_out_full / rf) - math.floor(s.zeros_full / rf))
        ii = max(1, min(rf, math.ceil(n_real / limit))) if rf > 1 else 1
    shared = rf > 1 and (weights_in_memory or n_real > limit)
    instances = min(n_real, limit) if shared else n_real
    detail.update(multiplier_limit=limit, multiplier_instances=instances)

    if shared:
        # a shared multiplier sees a different weight every cycle: general multipliers of the
        # declared width, split between DSP and LUT in the proportion of the products
        if weights_in_memory:
            # a weight from memory: a general multiplier, bound by its wider operand
            general_wide = max(wt.width, wx) > c.general_mult_lut_max_bits
        else:
            # constant weights behind a mux: the constants stay visible to HLS
            general_wide = wt.width > c.lut_mult_max_bits and wx > c.lut_mult_max_bits
        use_dsp = ctx.multipliers == "dsp" or (ctx.multipliers == "auto" and general_wide)
        n_dsp_inst = min(instances, math.ceil(n_real / ii)) if use_dsp else 0
        slices_each = int(_dsp_slices(np.array([wx]), np.array([wt.width]), ctx.board.dsp_ports)[0])
        dsp = n_dsp_inst * slices_each
        lut_mult = c.lut_per_mult_bit2 * wx * wt.width * (instances - n_dsp_inst)
        # an ii:1 mux on the data operand; a constant weight operand is a small ROM (one LUT6
        # holds 64 one-bit entries), a weight from memory needs none
        w_mux = 0 if weights_in_memory else wt.width * math.ceil(ii / 64)
        # the data operand takes one of at most n_in values, however many cycles it is shared over
        # (hls4ml's reuse loop walks the inputs again when R > n_in)
        data_sources = min(ii, n_in)
        lut_mux = instances * (wx * math.ceil((data_sources - 1) / (c.mux_inputs_per_lut - 1)) + w_mux)
        lut_per_dsp = c.lut_per_mult_bit2 * wx * wt.width / slices_each
    else:
        dsp = s.dsp
        lut_mult = s.lut_mult
        lut_mux = 0
        lut_per_dsp = (s.lut_moved / dsp) if dsp else 0.0
    lut_mult = math.ceil(lut_mult + s.lut_shift)

    # adder tree over the products (truncated to the accumulator, as hls4ml casts them to accum_t).
    # Weights from memory: hls4ml's reuse loop sums ceil(t_o/II) terms a cycle into an
    # accumulator. Constant weights: the code is unrolled whatever II is, so HLS builds each
    # output's whole tree and only the multipliers are shared (the products wait in registers)
    per_cycle = np.ceil(terms / ii).astype(np.int64) if weights_in_memory else terms
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
    # the levels after a cycle's products: with II > 1 the earlier products' levels ran in the
    # cycles before, so the path is a tree over one cycle's terms and one add into the rest
    widest = int(np.ceil(terms / ii).max(initial=0))
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
    in_dsp = (terms - bias_terms <= 1) & (s.dsp_terms == 1) & (ii == 1)
    ff += int((~in_dsp).sum()) * wr
    if shared or ii > 1:
        ff += accumulators * wa + instances * (wx + wt.width)
        if not weights_in_memory:
            # a shared multiplier's product waits in a register for the last product of its
            # output's tree (that last one goes straight into the tree)
            ff += max(0, n_real - int((terms - bias_terms > 0).sum())) * term_bits
    ff = math.ceil(c.ff_scale * ff)

    bram = 0
    lut_rom = 0
    if weights_in_memory:
        width = math.ceil(n_in * n_out / rf) * wt.width
        if rf <= c.rom_lut_max_depth:
            # a memory this shallow Vivado builds as distributed ROM (a LUT6 per bit per 64 words)
            lut_rom = width * math.ceil(rf / 64)
        else:
            bram = _bram18(width, rf, c.bram18_shapes)
        detail["weight_memory"] = {"depth": rf, "width_bits": width, "in": "lut" if lut_rom else "bram"}

    p = _positions(node)
    ii_total = ii * p
    latency += (p - 1) * ii
    detail.update(
        adders=adders,
        lut_split={"multipliers": lut_mult, "adders": lut_add, "muxes": lut_mux, "weight_rom": lut_rom},
        adder_levels=levels,
        path_ns=round(path_ns, 3),
        lut_per_dsp=lut_per_dsp,
        ii=ii,
    )
    lut = math.ceil(c.lut_scale * (lut_mult + lut_add + lut_mux + lut_rom))
    return LayerEstimate(node.name, "dense", lut, ff, dsp, bram, 0, latency, ii_total, detail)


# io_stream: hls4ml's dense(stream) reads its whole input vector, runs, then writes its whole output
STREAM_READS_ALL_FIRST = True


def reads_live(reader: Node, node: Node, live: np.ndarray, graph, strategy: str, rf: int) -> np.ndarray | None:
    """The inputs a dense with constant weights (Latency, or Resource at reuse factor 1) reads
    for its ``live`` outputs: those whose weight row has a non-zero entry in a live column;
    weights in memory read every input (None)."""
    if strategy == "Resource" and rf > 1:
        return None
    w = np.asarray(reader.params["weight"])
    return (w[:, live] != 0).any(axis=1)
