"""The first resource/latency model: exact values of its documented formulas on hand-made
graphs, and the directions every later model must keep."""

import ast
import importlib
import json
import math
import pathlib
import re

import numpy as np
import pytest
from graphs import BINARY, W8, binary_mlp, conv_graph, dense_graph

from edgebnn.backends.hls4ml.cost.blocks import _closest_reuse_factor
from edgebnn.boards import load_board
from edgebnn.errors import EdgebnnError
from edgebnn.estimate import CONSTANTS, Estimate, EstimateError, estimate, fit, valid_reuse_factors
from edgebnn.fixed import FixedType, dot_interval
from edgebnn.graph import Graph, Node, dense_node, flatten_node, input_node, threshold_node


def row(est: Estimate, name="dense"):
    return next(r for r in est.rows if r.name == name)


# ------------------------------------------------------------------ exact formula values


def test_exact_lut_multipliers_on_a_tiny_layer():
    # column 0: 3 (CSD 2 digits: one 8+3-bit adder) and 64 (a power of two: free);
    # column 1: 0 (nothing) and -100 (odd part 25 -> 5 bits + sign = 6, CSD 32-8+1: two 8+6-bit adders)
    g = dense_graph(weight=[[3, 0], [64, -100]])
    wa = g["dense"].type.width
    est = estimate(g, "pynq-z2", hls_tool="vitis_hls")
    r = row(est)
    assert r.detail["products"] == {"zero": 1, "free": 1, "shift_add": 1, "lut": 1, "dsp": 0}
    # one adder (column 0's two terms), level 1 of 8 + 8 + 1 bits capped by the accumulator
    add = min(wa, 17)
    assert r.detail["lut_split"] == {"multipliers": 11 + 2 * 14, "adders": add, "muxes": 0, "weight_rom": 0}
    assert (r.lut, r.dsp, r.bram18, r.uram) == (39 + add, 0, 0, 0)
    # the LUT multiply and one adder level (2.5 + 2.0 ns) fit one 10 ns cycle (8.75 ns usable):
    # only the 2 outputs are registered; Vitis HLS adds its layer boundary, ceil(3.5 / 8.75) = 1
    assert r.ff == 2 * wa
    assert (r.latency, r.ii) == (2, 1)
    assert row(estimate(g, "pynq-z2", hls_tool="vivado_hls")).latency == 1  # chained: boundary 0


def test_exact_dsp_product_and_post_adder():
    g = dense_graph(weight=[[107], [1]], input_type="fixed<16,6>")  # 107 = 128-16-4-1: 4 signed digits
    wa = g["dense"].type.width
    r = row(estimate(g, "pynq-z2", hls_tool="vivado_hls"))
    assert r.detail["products"] == {"zero": 0, "free": 1, "shift_add": 0, "lut": 0, "dsp": 1}
    assert (r.dsp, r.lut) == (1, 0)  # the one add sits in the DSP's post-adder
    # Vivado HLS, DSP48E1: 4.5 ns multiply + 1.2 ns adder level fit 8.75 ns; boundary 0
    assert r.ff == wa
    assert (r.latency, r.ii) == (1, 1)
    # Vitis HLS: 7.0 + 2.0 ns > 8.75 ns: two cycles, the 2 products (23 bits) registered between
    # them (no adder level fits after the multiply: floor((8.75 - 7.0) / 2.0) = 0), plus the
    # layer boundary ceil(3.5 / 8.75) = 1
    r = row(estimate(g, "pynq-z2", hls_tool="vitis_hls"))
    assert r.ff == 2 * min(wa, 16 + 8) + wa
    assert (r.latency, r.ii) == (1 + 2, 1)


def test_exact_threshold_costs_only_live_distinct_comparators():
    inp = input_node("input", (2,), FixedType.from_string("fixed<8,3>"))  # codes -128..127
    t = np.array(
        [
            [-128, -128, 5, 5],  # x >= -128 always holds; 5 twice: one comparator
            [-128, -3, 0, 7],
        ]
    )  # three live comparators
    levels = np.array([[-2, -1, 0, 1, 2], [-4, -1, 0, 1, 3]])
    g = Graph("thr", [inp, threshold_node("thr", inp, t, levels, FixedType(3, 3))])
    r = row(estimate(g, "pynq-z2"), "thr")
    assert r.detail["live_comparators"] == 4
    assert r.lut == 4 * 8 + 3 * 1  # comparators of 8 bits, 3 output bits from 3 comparator bits
    assert (r.ff, r.dsp, r.bram18, r.latency, r.ii) == (2 * 3, 0, 0, 1, 1)


def test_many_level_thresholds_cost_a_binary_search():
    """63 thresholds per channel (a 6-bit output): 6 compares against selected thresholds per
    element, not 63 comparators; 6 compare steps in sequence."""
    inp = input_node("input", (4,), FixedType.from_string("fixed<12,6>"))
    t = np.sort(np.random.default_rng(0).choice(np.arange(-2000, 2000), (4, 63), replace=False), axis=1)
    levels = np.tile(np.arange(-32, 32), (4, 1))
    g = Graph("thr", [inp, threshold_node("thr", inp, t, levels, FixedType(6, 6))])
    r = row(estimate(g, "pynq-z2"), "thr")
    assert (r.detail["search_steps"], r.detail["live_comparators"]) == (6, 4 * 6)
    # compares: 12 bits each; selects: 12-bit ROMs of 2, 4, 8, 16, 32 entries (one LUT6 per bit);
    # the level: 6 output bits of the 6 found bits (one LUT each)
    assert r.lut == 4 * (6 * 12 + 5 * 12 + 6)
    counted = 4 * (63 * 12 + 6 * 11)  # what one comparator per threshold would cost
    assert r.lut < counted / 4
    assert r.latency >= 2


def test_binary_mlp_rows_match_the_formulas():
    g = binary_mlp()
    est = estimate(g, "pynq-z2")
    d0 = g["dense0"]
    r = row(est, "dense0")
    n_in, n_out = d0.params["weight"].shape
    assert r.detail["products"]["free"] == n_in * n_out
    # the adder tree is the popcount: 8 + 4 + 2 + 1 adders per output, terms of 8 + 2 bits,
    # levels 11, 12, 13, 13 bits wide (capped by the 13-bit accumulator)
    assert (n_in, n_out, d0.type.width) == (16, 12, 13)
    assert r.detail["adders"] == n_out * (n_in - 1)
    assert r.lut == n_out * (8 * 11 + 4 * 12 + 2 * 13 + 1 * 13)
    assert r.ff == n_out * d0.type.width
    assert (r.dsp, r.latency, r.ii) == (0, 2, 1)  # no multiply cycle


# ------------------------------------------------------------------------- directions


@pytest.mark.parametrize("strategy", ["Latency", "Resource"])
@pytest.mark.parametrize("board", ["pynq-z2", "zcu104"])
def test_binary_layers_use_no_dsp(strategy, board):
    g = binary_mlp(sizes=(64, 32, 32, 10), out_levels="fixed<4,2>")
    for rf in (1, 2, 4, 8, 16):
        est = estimate(g, board, strategy=strategy, reuse_factor=rf)
        assert est.totals["dsp"] == 0
        assert all(r.detail["products"]["dsp"] == r.detail["products"]["lut"] == 0 for r in est.rows if r.op == "dense")


def test_binary_activations_times_wide_weights_use_no_dsp():
    g = dense_graph(input_type=str(BINARY), weight_type=FixedType(12, 2))
    assert estimate(g, "zcu104").totals["dsp"] == 0
    assert estimate(dense_graph(weight_type=FixedType(12, 2)), "zcu104").totals["dsp"] > 0


@pytest.mark.parametrize("strategy", ["Latency", "Resource"])
def test_larger_reuse_factor_fewer_dsp_longer_latency(strategy):
    g = dense_graph(input_type="fixed<16,6>")
    rows = [row(estimate(g, "zcu104", strategy=strategy, reuse_factor=rf)) for rf in (1, 2, 4, 8, 16, 32)]
    dsp = [r.dsp for r in rows]
    lat = [r.latency for r in rows]
    # Resource with R > 1 reads weights from memory: general multipliers, zeros and cheap
    # constants save nothing any more, so the comparison starts at R = 2 there
    start = 1 if strategy == "Resource" else 0
    assert dsp[0] > 0 and all(a >= b for a, b in zip(dsp[start:], dsp[start + 1 :])) and dsp[0] > dsp[-1]
    assert all(a <= b for a, b in zip(lat, lat[1:])) and lat[0] < lat[-1]
    # hls4ml's multiplier_limit sets the II (never above the reuse factor)
    assert all(r.ii <= rf for r, rf in zip(rows, (1, 2, 4, 8, 16, 32))) and rows[0].ii == 1
    if strategy == "Resource":
        assert [r.ii for r in rows] == [1, 2, 4, 8, 16, 32]


def test_latency_strategy_dsp_is_hls4ml_multiplier_limit_for_single_slice_products():
    g = dense_graph(input_type="fixed<16,6>", weight_type=FixedType(16, 2), zero_fraction=0.3)
    r1 = row(estimate(g, "zcu104"))
    n, zeros = 64 * 32, r1.detail["products"]["zero"]
    real = r1.detail["products"]["dsp"] + r1.detail["products"]["lut"]
    assert r1.dsp == r1.detail["products"]["dsp"]
    for rf in (3, 7, 64):
        r = row(estimate(g, "zcu104", reuse_factor=rf))
        limit = math.ceil(n / rf) - math.floor(zeros / rf)
        assert r.detail["multiplier_limit"] == limit
        assert r.ii == min(rf, math.ceil(real / limit))
        assert r.dsp == min(limit, math.ceil(real / r.ii))  # shared 16x16 multipliers are DSPs


@pytest.mark.parametrize(
    ("weight_bits", "input_type", "in_dsp"),
    [
        (4, "fixed<16,6>", True),
        (6, "fixed<16,6>", True),
        (7, "fixed<7,1>", False),
        (8, "fixed<8,3>", False),
        (8, "fixed<9,3>", True),
    ],
)
def test_general_multipliers_follow_the_wider_operand(weight_bits, input_type, in_dsp):
    # Resource with R > 1: the weight comes from memory, so each shared multiplier is a general
    # one, in DSPs when its wider operand has more than general_mult_lut_max_bits (8) bits,
    # whatever the narrower one (CSV rows 143/144: 6 x 16 and 7 x 16 in DSPs, 7 x 7 in LUTs;
    # row 135: 8 x 8 in LUTs)
    g = dense_graph(weight_type=FixedType(weight_bits, 1), input_type=input_type)
    r = row(estimate(g, "zcu104", strategy="Resource", reuse_factor=8))
    n, wx = 64 * 32, FixedType.from_string(input_type).width
    instances = r.detail["multiplier_instances"]
    assert instances == n // 8
    assert r.detail["products"]["dsp" if in_dsp else "lut"] == n
    assert r.dsp == (instances if in_dsp else 0)
    lut_mult = math.ceil(CONSTANTS.lut_per_mult_bit2 * wx * weight_bits * instances)
    assert r.detail["lut_split"]["multipliers"] == (0 if in_dsp else lut_mult)
    # constant weights shared under the Latency strategy keep the constant rule: a 4- or 6-bit
    # weight is built in LUTs whatever the input's width (CSV rows 26/27)
    if weight_bits <= CONSTANTS.lut_mult_max_bits:
        assert row(estimate(g, "zcu104", strategy="Latency", reuse_factor=8)).dsp == 0


def test_latency_strategy_sharing_keeps_the_whole_adder_tree_and_holds_the_products():
    # the Latency strategy's code is unrolled whatever the reuse factor: only the multipliers are
    # shared, each output's tree is built whole and the products wait for the last one in
    # registers; the Resource strategy's reuse loop sums into accumulators instead
    g = dense_graph(n_in=32, n_out=10, input_type="fixed<16,6>", weight_type=FixedType(16, 2))
    w = next(n for n in g.compute_nodes() if n.op == "dense").params["weight"]
    tree = int(np.maximum((w != 0).sum(axis=0) - 1, 0).sum())  # two-input adders of the whole trees
    r16 = row(estimate(g, "zcu104", reuse_factor=16))
    # one adder behind each DSP sits in its post-adder
    assert r16.ii > 1 and r16.detail["adders"] == tree - min(r16.dsp, tree)
    real = r16.detail["products"]["dsp"] + r16.detail["products"]["lut"]
    assert r16.ff >= (real - 10) * 16  # every product but each output's last waits, 16 bits wide
    res = row(estimate(g, "zcu104", strategy="Resource", reuse_factor=16))
    assert res.detail["adders"] < r16.detail["adders"] and res.ff < r16.ff


def test_resource_strategy_stores_weights_in_bram():
    g = dense_graph(weight_type=W8)
    r1 = row(estimate(g, "pynq-z2", strategy="Resource", reuse_factor=1))
    assert r1.bram18 == 0  # hls4ml keeps RF=1 weights as constants
    for rf, brams in ((32, math.ceil(64 * 32 // 32 * 8 / 36)), (64, math.ceil(32 * 8 / 36)), (1024, math.ceil(2 * 8 / 18))):
        r = row(estimate(g, "pynq-z2", strategy="Resource", reuse_factor=rf))
        assert r.detail["weight_memory"] == {"depth": rf, "width_bits": 64 * 32 // rf * 8, "in": "bram"}
        assert r.bram18 == brams and r.detail["lut_split"]["weight_rom"] == 0
    # a memory of a few words is a LUT ROM (a LUT6 per bit holds 64 words), no BRAM
    shallow = row(estimate(g, "pynq-z2", strategy="Resource", reuse_factor=8))
    assert shallow.detail["weight_memory"] == {"depth": 8, "width_bits": 64 * 32 // 8 * 8, "in": "lut"}
    assert shallow.bram18 == 0 and shallow.detail["lut_split"]["weight_rom"] == 64 * 32 // 8 * 8
    assert row(estimate(g, "pynq-z2", strategy="Latency", reuse_factor=8)).bram18 == 0


def test_resource_rf1_is_the_latency_design():
    g = dense_graph()
    a = estimate(g, "pynq-z2", strategy="Resource")
    b = estimate(g, "pynq-z2", strategy="latency")
    assert a.rows == b.rows


def test_wider_weights_cost_more():
    lut = {}
    dsp = {}
    bram = {}
    for bits in (3, 4, 5, 6, 8, 12, 16, 24):
        g = dense_graph(weight_type=FixedType(bits, 1), input_type="fixed<16,6>")
        est = estimate(g, "zcu104")
        lut[bits], dsp[bits] = row(est).lut, est.dsp_needed
        bram[bits] = row(estimate(g, "pynq-z2", strategy="Resource", reuse_factor=32)).bram18
    # while products stay in LUTs, LUTs grow with the width; then DSPs take over and grow
    assert lut[3] < lut[4] < lut[5] < lut[6]
    assert dsp[3] == dsp[4] == dsp[5] == dsp[6] == 0
    assert 0 < dsp[8] < dsp[12] < dsp[16] <= dsp[24]
    assert all(bram[a] < bram[b] for a, b in zip(sorted(bram), sorted(bram)[1:]))


def test_products_wider_than_one_dsp_take_several():
    # 32-bit weights x 16-bit inputs: 2 slices of DSP48E1 25x18 (32 = 25 + 7 on the A port)
    g = dense_graph(
        n_in=4,
        n_out=1,
        weight=[[2**30 + 2**14 + 1], [2**29 + 2**13 + 3], [2**28 + 2**12 + 5], [2**27 + 2**11 + 7]],
        weight_type=FixedType(32, 1),
        input_type="fixed<16,6>",
    )
    r = row(estimate(g, "pynq-z2"))
    assert r.detail["products"]["dsp"] == 4
    assert r.dsp == 8
    # the same weights fit one slice when the input has at most 18 bits... they do not on B=18
    # with 19-bit input: ceil(32/25)*ceil(19/18) = 4 vs ceil(32/18)*ceil(19/25) = 2 -> 2 each
    g19 = dense_graph(n_in=1, n_out=1, weight=[[2**30 + 2**14 + 1]], weight_type=FixedType(32, 1), input_type="fixed<19,6>")
    assert row(estimate(g19, "pynq-z2")).dsp == 2


def test_zero_weights_cost_nothing():
    dense = dense_graph(input_type="fixed<16,6>")
    pruned_w = dense["dense"].params["weight"].copy()
    pruned_w[:, ::2] = 0  # prune every other output column entirely
    pruned = dense_graph(weight=pruned_w, input_type="fixed<16,6>")
    a, b = row(estimate(dense, "zcu104")), row(estimate(pruned, "zcu104"))
    assert b.detail["products"]["zero"] == int((pruned_w == 0).sum())
    assert b.dsp < a.dsp and b.lut < a.lut
    # a layer of zeros is free apart from its output register
    zero = dense_graph(weight=np.zeros((16, 4), dtype=np.int64))
    z = row(estimate(zero, "zcu104"))
    assert (z.lut, z.dsp, z.bram18) == (0, 0, 0)
    assert z.detail["products"]["zero"] == 64


def test_zeros_save_nothing_when_weights_are_in_memory():
    w = dense_graph()["dense"].params["weight"].copy()
    w[: w.shape[0] // 2] = 0
    a = row(estimate(dense_graph(input_type="fixed<16,6>"), "zcu104", strategy="Resource", reuse_factor=4))
    b = row(estimate(dense_graph(weight=w, input_type="fixed<16,6>"), "zcu104", strategy="Resource", reuse_factor=4))
    assert a.dsp > 0 and (a.dsp, a.bram18) == (b.dsp, b.bram18)


def test_power_of_two_weights_need_no_multiplier():
    rng = np.random.default_rng(1)
    w = rng.choice(np.array([-64, -8, -2, -1, 1, 2, 4, 32, -128]), size=(32, 16))
    r = row(estimate(dense_graph(weight=w, input_type="fixed<16,6>"), "zcu104"))
    assert r.detail["products"]["free"] == w.size
    assert r.dsp == 0 and r.detail["lut_split"]["multipliers"] == 0


def test_a_bias_is_one_more_adder_term():
    w = np.full((8, 2), 3)
    bias_type = FixedType(8, 4)
    no = row(estimate(dense_graph(weight=w), "pynq-z2"))
    yes = row(estimate(dense_graph(weight=w, bias=[5, 0], bias_type=bias_type), "pynq-z2"))
    assert yes.detail["adders"] == no.detail["adders"] + 1


def test_shorter_clock_more_cycles():
    g = dense_graph(n_in=256, n_out=8, input_type="fixed<16,6>")
    slow = estimate(g, "zcu104", clock_period=10)
    fast = estimate(g, "zcu104", clock_period=2)
    assert fast.latency_cycles > slow.latency_cycles
    assert fast.totals["ff"] > slow.totals["ff"]
    assert estimate(g, "zcu104").clock_period_ns == 5.0


def test_io_stream_adds_a_cycle_and_a_fifo_per_node():
    g = binary_mlp()
    par = estimate(g, "pynq-z2")
    stream = estimate(g, "pynq-z2", io_type="io_stream")
    for a, b, node in zip(par.rows, stream.rows, g.compute_nodes()):
        if node.op == "dense":  # read all, compute, write all: not pipelined, II = its latency
            assert b.latency == a.latency + 1 + CONSTANTS.stream_dense_overhead_cycles
            assert b.ii == b.latency
        else:
            assert b.latency == a.latency + 1 and b.ii == a.ii
        fifo = node.shape[-1] * node.type.width
        if node.op == "dense":  # plus the data[n_in] and res[n_out] arrays of dense(stream)
            n_in = g[node.inputs[0]].shape[-1]
            arrays = n_in * g[node.inputs[0]].type.width + node.shape[-1] * node.type.width
            assert b.detail["stream_array_bits"] == arrays
            assert b.ff == a.ff + fifo + arrays
        else:
            assert b.ff == a.ff + fifo
        assert (a.lut, a.dsp) == (b.lut, b.dsp)
    assert stream.ii == max(r.latency for r in stream.rows if r.op == "dense")


def test_outputs_no_later_layer_reads_are_removed():
    from edgebnn.backends.hls4ml.cost import LIVE_READS
    from edgebnn.backends.hls4ml.cost.blocks import _live_outputs

    g = binary_mlp()
    dense = [n for n in g.compute_nodes() if n.op == "dense"]
    src = g[dense[1].inputs[0]]  # the threshold whose outputs dense1 reads
    w = dense[1].params["weight"].copy()
    w[:3, :] = 0  # dense1 never reads the first three of them
    dense[1].params["weight"] = w
    live = _live_outputs(g, "Latency", {n.name: 1 for n in dense}, LIVE_READS)
    assert not live[src.name][:3].any() and live[src.name][3:].all()
    assert live[dense[-1].name].all()  # the graph's output is read
    # weights in memory (Resource, R > 1) are read whatever their values: nothing is removed
    assert _live_outputs(g, "Resource", {n.name: 2 for n in dense}, LIVE_READS)[src.name].all()
    # a dense whose later reader ignores some outputs builds only the others
    d = dense_graph(n_in=8, n_out=4, input_type="fixed<16,6>")
    full = row(estimate(d, "zcu104"))
    from edgebnn.backends.hls4ml.cost import dense
    from edgebnn.backends.hls4ml.cost.context import _Context
    from edgebnn.estimate.core import _resolve_types

    ctx = _Context(load_board("zcu104"), "Latency", "io_parallel", 5.0, CONSTANTS)
    node = d["dense"]
    cut = dense.cost(node, d[node.inputs[0]], 1, ctx, _resolve_types(d, None), [], np.array([True, False, True, True]))
    assert cut.detail["dead_outputs"] == 1 and cut.detail["n_out"] == 3
    assert cut.lut < full.lut and cut.ff < full.ff


def test_positions_reuse_one_dense_unit():
    w = np.array([[1, 3], [5, -7], [2, 9], [-3, 4]])
    wt = FixedType(5, 1)
    inp = input_node("input", (3, 4), FixedType.from_string("fixed<8,3>"))
    lo, hi = dot_interval(inp.lo, inp.hi, wt.from_codes(w))
    acc = FixedType.for_range(float(lo.min()), float(hi.max()), inp.type.lsb_exp + wt.lsb_exp)
    node = Node("dense", "dense", ["input"], (3, 2), acc, {"weight": w, "lo": lo, "hi": hi}, {"weight_type": str(wt)})
    flat = dense_graph(weight=w, weight_type=wt)
    multi = Graph("multi", [inp, node])
    a, b = row(estimate(flat, "pynq-z2", reuse_factor=2)), row(estimate(multi, "pynq-z2", reuse_factor=2))
    assert (b.lut, b.dsp, b.ff) == (a.lut, a.dsp, a.ff)
    assert b.ii == 3 * a.ii and b.latency == a.latency + 2 * a.ii


# ------------------------------------------------------------------- whole design


def test_totals_are_sums_of_rows_and_utilization_is_percent_of_board():
    g = binary_mlp(sizes=(64, 32, 32, 10), out_levels="fixed<4,2>")
    board = load_board("pynq-z2")
    est = estimate(g, board, reuse_factor={"dense0": 4, "dense2": 2})
    assert [r.name for r in est.rows] == [n.name for n in g.compute_nodes()]
    for key in ("lut", "ff", "dsp", "bram18", "uram"):
        assert est.totals[key] == sum(getattr(r, key) for r in est.rows)
        assert (
            est.utilization[key] == pytest.approx(100 * est.totals[key] / getattr(board, key))
            if getattr(board, key)
            else est.utilization[key] == 0.0
        )
    assert est.latency_cycles == sum(r.latency for r in est.rows)
    assert est.ii == max(r.ii for r in est.rows)
    assert est.latency_ns == est.latency_cycles * 10.0
    # binary products are no "mul" operations: hls4ml's multiplier limit leaves the II at 1
    assert row(est, "dense1").ii == 1 and row(est, "dense2").ii <= 2


def test_fits_flag_follows_the_limit():
    g = dense_graph(input_type="fixed<16,6>", n_in=16, n_out=8)
    est = estimate(g, "pynq-z2")
    board = est.board
    fraction = max(est.totals[k] / board.resources()[k] for k in est.totals if board.resources()[k])
    assert 0 < fraction < 1
    assert estimate(g, "pynq-z2", utilization_limit=fraction).fits
    assert not estimate(g, "pynq-z2", utilization_limit=fraction * 0.999).fits
    assert est.fits == (fraction <= 0.8)


def test_too_many_dsps_do_not_fit_and_warn():
    g = dense_graph(n_in=64, n_out=64, input_type="fixed<16,6>", weight_type=FixedType(16, 2))
    est = estimate(g, "pynq-z2", utilization_limit=1.0)
    assert est.dsp_needed > 220 and est.totals["dsp"] == 220 and not est.fits
    assert any("220" in w and "LUT" in w for w in est.warnings)
    assert estimate(g, "alveo-u250").fits


def test_to_dict_is_strict_json_and_consistent():
    est = estimate(binary_mlp(), "pynq-z2", reuse_factor={"dense1": 2})
    d = json.loads(json.dumps(est.to_dict(), allow_nan=False))
    assert d["totals"] == est.totals
    assert d["fits"] is est.fits
    assert d["board"]["name"] == "pynq-z2" and d["board"]["lut"] == 53200
    assert [r["name"] for r in d["rows"]] == [r.name for r in est.rows]
    assert d["rows"][0]["lut"] == est.rows[0].lut
    assert d["reuse_factor"] == {"dense1": 2}
    assert d["latency_cycles"] == est.latency_cycles and d["ii"] == est.ii
    assert d["utilization_percent"]["uram"] == 0.0


def test_used_resource_the_board_lacks_is_inf_and_null_in_json():
    est = estimate(binary_mlp(), "pynq-z2")
    fake = type(est.board)(
        **{
            **{
                f: getattr(est.board, f)
                for f in ("name", "part", "family", "lut", "ff", "dsp", "dsp_type", "bram18", "uram", "clock_period_ns", "source")
            },
            "lut": 0,
        }
    )
    est0 = estimate(binary_mlp(), fake)
    assert math.isinf(est0.utilization["lut"]) and not est0.fits
    assert json.loads(json.dumps(est0.to_dict(), allow_nan=False))["utilization_percent"]["lut"] is None
    assert "inf" in est0.table()


def test_table_shows_rows_totals_board_and_percent():
    est = estimate(binary_mlp(), "zcu104", strategy="resource", reuse_factor=2)
    text = est.table()
    for r in est.rows:
        assert r.name in text
    lines = text.splitlines()
    assert any(line.startswith("total") and str(est.totals["lut"]) in line for line in lines)
    assert any(line.startswith("zcu104") and "230400" in line for line in lines)
    assert any(line.startswith("% of board") and "%" in line for line in lines)
    assert "Resource" in text and "xczu7ev-ffvc1156-2-e" in text and "fits under 80%" in text


def test_resource_reuse_factor_snaps_like_hls4ml():
    g = binary_mlp(sizes=(64, 32, 10))
    est = estimate(g, "zcu104", strategy="Resource", reuse_factor=7)
    assert row(est, "dense0").detail["reuse_factor"] == 8
    assert row(est, "dense0").detail["reuse_factor_requested"] == 7
    assert row(est, "dense0").ii == 8
    assert any("'dense0'" in w and "uses 8" in w for w in est.warnings)
    assert not estimate(g, "zcu104", strategy="Latency", reuse_factor=7).warnings


def test_valid_reuse_factors_match_hls4ml():
    fpga_backend = pytest.importorskip("hls4ml.backends.fpga.fpga_backend")
    backend = fpga_backend.FPGABackend

    class Stub:  # the two methods only use each other
        _validate_reuse_factor = backend._validate_reuse_factor

    for n_in, n_out in [(1, 1), (16, 12), (64, 32), (32, 10), (7, 13), (100, 6), (27, 36)]:
        valid = backend.get_valid_reuse_factors(Stub(), n_in, n_out)
        assert valid_reuse_factors(n_in, n_out) == valid
        for chosen in (1, 3, 7, 10, 50, 5000):
            assert _closest_reuse_factor(valid, chosen) == backend.get_closest_reuse_factor(None, valid, chosen)


def test_graph_file_path_is_accepted(tmp_path):
    g = binary_mlp()
    g.save(tmp_path / "g.npz")
    assert estimate(tmp_path / "g.npz", "pynq-z2").rows == estimate(g, "pynq-z2").rows
    assert estimate(str(tmp_path / "g.npz"), load_board("pynq-z2").path).totals == estimate(g, "pynq-z2").totals


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ({"strategy": "Fast"}, "strategy"),
        ({"strategy": "Resource_Unrolled"}, "strategy"),
        ({"io_type": "io_serial"}, "io_type"),
        ({"reuse_factor": 0}, "reuse factor"),
        ({"reuse_factor": 2.5}, "reuse factor"),
        ({"reuse_factor": True}, "reuse factor"),
        ({"reuse_factor": {"sign0": 2}}, "'sign0'"),
        ({"reuse_factor": {"dense0": -1}}, "'dense0'"),
        ({"clock_period": 0}, "clock_period"),
        ({"clock_period": "5"}, "clock_period"),
        ({"utilization_limit": 0}, "utilization_limit"),
        ({"utilization_limit": 1.5}, "utilization_limit"),
    ],
)
def test_bad_options_are_refused_in_one_sentence(kwargs, words):
    with pytest.raises(EdgebnnError) as err:  # a TargetError for the target's options, EstimateError for the rest
        estimate(binary_mlp(), "pynq-z2", **kwargs)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_not_a_graph_is_refused():
    with pytest.raises(EstimateError, match="graph"):
        estimate({"nodes": []}, "pynq-z2")


def test_constants_live_in_one_table():
    assert CONSTANTS.lut_mult_max_bits == 6 and CONSTANTS.general_mult_lut_max_bits == 8 and CONSTANTS.clock_uncertainty == 0.125
    cheap = type(CONSTANTS)(lut_per_adder_bit=0.5)
    g = binary_mlp()
    assert estimate(g, "pynq-z2", constants=cheap).totals["lut"] < estimate(g, "pynq-z2").totals["lut"]


def test_estimate_module_imports_no_tensorflow_or_hls4ml():
    mod = importlib.import_module("edgebnn.estimate")  # the name edgebnn.estimate is the function
    cost = importlib.import_module("edgebnn.backends.hls4ml.cost")

    files = sorted(pathlib.Path(mod.__file__).parent.glob("*.py")) + sorted(pathlib.Path(cost.__file__).parent.glob("*.py"))
    assert {f.name for f in files} >= {"__init__.py", "fit.py", "report.py", "dense.py", "context.py"}
    for path in files:
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {n for n in names if n.split(".")[0] in ("tensorflow", "keras", "hls4ml")}, path


# ------------------------------------------------------------ types, casts, fit (issue 5)


def test_public_name_is_the_function_and_fit_is_importable():
    import edgebnn

    g = binary_mlp()
    assert edgebnn.estimate is estimate
    assert edgebnn.estimate(g, "pynq-z2").totals == estimate(g, "pynq-z2").totals
    found = fit(g, "pynq-z2")  # a small binary MLP fits at once, as the fastest design
    assert (found.reuse_factor, found.tried) == (1, ((1, True),))
    assert found.estimate.totals == estimate(g, "pynq-z2", utilization_limit=0.8).totals


def test_accumulator_override_changes_adder_widths():
    g = dense_graph(input_type="fixed<16,6>", weight_type=FixedType(16, 6))
    wide = row(estimate(g, "zcu104"))
    assert wide.detail["accumulator_bits"] > 16
    narrow = row(estimate(g, "zcu104", types={"dense": {"accum": "fixed<16,6>"}}))
    assert narrow.detail["accumulator_bits"] == 16 and narrow.detail["result_bits"] == 16
    assert narrow.lut < wide.lut and narrow.ff < wide.ff
    assert row(estimate(g, "zcu104", types={"*": {"accum": "fixed<16,6>"}})) == narrow
    wider_in = dense_graph(input_type="fixed<8,3>")
    # the input node's result type is what the dense multiplies
    a = row(estimate(wider_in, "zcu104"))
    b = row(estimate(wider_in, "zcu104", types={"input": {"result": "fixed<16,6>"}}))
    assert b.detail["input_bits"] == 16 and b.lut + 10 * b.dsp > a.lut + 10 * a.dsp


@pytest.mark.parametrize(
    "types,words",
    [
        ({"nothere": {"accum": "fixed<16,6>"}}, "'nothere'"),
        ({"dense": {"bogus": "fixed<16,6>"}}, "'bogus'"),
        ({"dense": {"accum": "float"}}, "fixed-point"),
        ({"input": {"accum": "fixed<16,6>"}}, "input node"),
    ],
)
def test_bad_type_overrides_are_refused(types, words):
    with pytest.raises(EstimateError) as err:
        estimate(dense_graph(), "pynq-z2", types=types)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_forced_multipliers():
    g = dense_graph(input_type="fixed<16,6>", weight_type=FixedType(8, 1))
    auto = row(estimate(g, "zcu104"))
    dsp = row(estimate(g, "zcu104", multipliers="dsp"))
    lut = row(estimate(g, "zcu104", multipliers="lut"))
    assert lut.dsp == 0 and dsp.dsp >= auto.dsp and lut.lut > auto.lut
    with pytest.raises(EstimateError, match="multipliers"):
        estimate(g, "zcu104", multipliers="fabric")


def test_cast_nodes_are_cheap_elementwise():
    from edgebnn.graph import cast_node

    inp = input_node("input", (16,), FixedType.from_string("fixed<8,3>"))
    d = dense_node("dense", inp, np.ones((16, 8), dtype=np.int64) * 3, FixedType(4, 2))
    relu = cast_node("relu", d, FixedType.from_string("ufixed<8,4,RND,SAT>"), relu=True)
    g = Graph("c", [inp, d, relu])
    r = row(estimate(g, "pynq-z2", hls_tool="vivado_hls"), "relu")
    assert r.op == "cast" and r.dsp == 0 and 0 < r.lut <= 8 * 8 * 3 and r.ii == 1
    assert (r.latency, r.ff) == (0, 0)  # Vivado HLS chains it into the dense: no register
    # Vitis HLS: its own function, the layer boundary: ceil(3.5 / 8.75) = 1, ceil(3.5 / 2.625) = 2
    assert row(estimate(g, "pynq-z2", hls_tool="vitis_hls"), "relu").latency == 1
    fast = row(estimate(g, "pynq-z2", clock_period=3, hls_tool="vitis_hls"), "relu")
    assert fast.latency == 2 and fast.ff == 8 * 8


def _logits_graph(n_out=3, width=16):
    inp = input_node("input", (4,), FixedType.from_string("fixed<8,3>"))
    d = dense_node("dense", inp, (np.arange(4 * n_out).reshape(4, n_out) % 100) + 3, W8)
    return Graph("logits", [inp, d], {"stripped_softmax": {"n": n_out}}), f"fixed<{width},6>"


def test_softmax_row_matches_the_formulas():
    g, t = _logits_graph()
    est = estimate(g, "pynq-z2", hls_tool="vivado_hls", types={"dense": {"result": t}})
    sm = row(est, "softmax")
    n, wi, tb = 3, 16, 18
    # sum tree (n-1)*18, max tree (n-1)*wi*(compare + select), n subtractions of wi bits
    assert sm.lut == (n - 1) * tb + (n - 1) * wi * 2 + n * wi == 148
    assert sm.dsp == n  # 18x18 products fit one DSP48E1 (25x18)
    assert sm.bram18 == 2 + 1  # exp table replicated ceil(3/2) times (two ports each) + the 1/x table
    # Vivado HLS at 10 ns (8.75 usable): boundary 0, two 1-cycle table reads, the max tree +
    # subtraction (2*(1.2+1.2)+1.2 = 6.0 ns) and the sum tree (2.4 ns) chain into them, 1-cycle multiply
    assert (sm.latency, sm.ii) == (3, 1)
    assert sm.ff == (3 - 1) * n * tb + n * wi
    # Vitis HLS: boundary ceil(3.5/8.75) = 1, two 2-cycle reads, max tree 2*(1.5+2.0)+2.0 = 9.0 ns
    # is one cycle beyond the first, sum tree 4.0 ns none, multiply 7.0 ns one cycle
    vit = row(estimate(g, "pynq-z2", hls_tool="Vitis HLS 2021.1", types={"dense": {"result": t}}), "softmax")
    assert vit.latency == 1 + 2 * 2 + 1 + 0 + 1
    lat = row(
        estimate(g, "pynq-z2", hls_tool="vivado_hls", types={"dense": {"result": t}}, softmax_implementation="latency"), "softmax"
    )
    assert lat.lut == (n - 1) * tb and lat.latency <= sm.latency
    lut = row(estimate(g, "pynq-z2", multipliers="lut", types={"dense": {"result": t}}), "softmax")
    assert lut.dsp == 0 and lut.lut > sm.lut + n * tb * tb - 1
    assert est.latency_cycles == row(est).latency + sm.latency
    assert "softmax" not in [r.name for r in estimate(g, "pynq-z2", softmax=False).rows]
    g.meta.clear()
    assert "softmax" not in [r.name for r in estimate(g, "pynq-z2").rows]
    assert row(estimate(g, "pynq-z2", softmax=True), "softmax").detail["n"] == 3


def test_io_stream_softmax_shares_its_multipliers_at_the_reuse_factor():
    g, t = _logits_graph(n_out=10)
    types = {"dense": {"result": t}}
    par = row(estimate(g, "pynq-z2", reuse_factor=4, types=types), "softmax")
    assert par.dsp == 10  # io_parallel: a product per class
    for rf, dsp in ((1, 10), (4, 3), (16, 1)):
        assert row(estimate(g, "pynq-z2", io_type="io_stream", reuse_factor=rf, types=types), "softmax").dsp == dsp
    per_node = estimate(g, "pynq-z2", io_type="io_stream", reuse_factor={"dense": 4}, types=types)
    assert row(per_node, "softmax").dsp == 10  # a per-node reuse factor leaves the softmax at 1


def test_softmax_grows_with_classes():
    small, big = (row(estimate(_logits_graph(n)[0], "zcu104"), "softmax") for n in (4, 32))
    assert big.lut > small.lut and big.dsp > small.dsp and big.bram18 > small.bram18
    assert big.latency >= small.latency


def test_hls_tool_sets_the_timing():
    g = dense_graph(n_in=256, n_out=8, input_type="fixed<16,6>")
    # a 7-series part: Vitis HLS keeps each layer a registered pipeline with slower operators
    vivado = estimate(g, "zc706", clock_period=3.33, hls_tool="Vivado HLS 2019.2")
    vitis = estimate(g, "zc706", clock_period=3.33, hls_tool="vitis")
    assert vivado.hls_tool == "vivado_hls" and vitis.hls_tool == "vitis_hls"
    assert vitis.latency_cycles > vivado.latency_cycles
    assert (vivado.totals["lut"], vivado.totals["dsp"]) == (vitis.totals["lut"], vitis.totals["dsp"])
    # an UltraScale+ part: Vitis HLS 2022.2 and later chain the layers as Vivado HLS does
    # (reference rows 103, 108: a dense layer takes its datapath's cycles, a relu none)
    vivado = estimate(g, "zcu104", clock_period=3.33, hls_tool="Vivado HLS 2019.2")
    vitis = estimate(g, "zcu104", clock_period=3.33, hls_tool="vitis")
    assert vitis.latency_cycles == vivado.latency_cycles
    assert estimate(g, "zcu104").hls_tool == "vitis_hls"  # the default
    assert (vivado.totals["lut"], vivado.totals["dsp"]) == (vitis.totals["lut"], vitis.totals["dsp"])
    with pytest.raises(EdgebnnError, match="hls_tool"):
        estimate(g, "zcu104", hls_tool="catapult")
    with pytest.raises(EstimateError, match="softmax_implementation"):
        estimate(g, "zcu104", softmax_implementation="argmax")


def test_unknown_future_op_is_a_clear_error():
    g = binary_mlp()
    g.nodes[-1].op = "lstm"  # as if a newer freeze wrote it
    with pytest.raises(EstimateError) as err:
        estimate(g, "pynq-z2")
    assert "'lstm'" in str(err.value) and "dense" in str(err.value) and "\n" not in str(err.value)


def test_dsp_cap_moves_multipliers_to_luts():
    g = dense_graph(n_in=64, n_out=64, input_type="fixed<16,6>", weight_type=FixedType(16, 2))
    big = estimate(g, "alveo-u250")
    capped = estimate(g, "pynq-z2", utilization_limit=1.0)
    assert capped.dsp_needed == big.totals["dsp"] > 220 == capped.totals["dsp"]
    assert capped.totals["lut"] > big.totals["lut"] + 50 * (big.totals["dsp"] - 220)


def test_fit_returns_the_smallest_fitting_reuse_factor():

    g = dense_graph(n_in=64, n_out=64, input_type="fixed<16,6>", weight_type=FixedType(16, 2))
    # under the Latency strategy the code stays unrolled whatever the reuse factor: every
    # adder of the 64 trees and a register per waiting product, too big for the board
    latency = fit(g, "pynq-z2", limit=0.8)
    assert not latency.fits and "try the Resource strategy" in latency.reason
    found = fit(g, "pynq-z2", limit=0.8, strategy="Resource")
    assert found.fits and found.estimate.fits
    rf = found.reuse_factor
    assert rf in valid_reuse_factors(64, 64) and rf > 1
    smaller = [r for r in valid_reuse_factors(64, 64) if r < rf]
    assert all(not estimate(g, "pynq-z2", reuse_factor=r, strategy="Resource").fits for r in smaller)
    assert [t[0] for t in found.tried] == smaller + [rf]
    assert str(rf) in str(found)


def test_fit_says_when_nothing_fits():

    g = dense_graph(n_in=64, n_out=64, input_type="fixed<16,6>", weight_type=FixedType(16, 2))
    none = fit(g, "cora-z7-07s", limit=0.05)
    assert not none.fits and none.reuse_factor is None and none.estimate is None
    assert "nothing fits cora-z7-07s" in none.reason and str(none) == none.reason


# ------------------------------------------------------------------------------ CLI


def test_cli_estimate_table_fit_bars_and_svg(tmp_path, capsys):
    from edgebnn.cli import main

    g = dense_graph(n_in=64, n_out=64, input_type="fixed<16,6>", weight_type=FixedType(16, 2))
    g.save(tmp_path / "graph.npz")
    assert main(["estimate", str(tmp_path), "--board", "pynq-z2", "--reuse-factor", "2"]) == 0
    out = capsys.readouterr().out
    assert "reuse factor 2" in out and "total" in out and "% of board" in out
    assert re.search(r"^  DSP\s+[#.|]+[ >]\s+\d+\.\d%$", out, re.M)
    svg = tmp_path / "u.svg"
    fit_all = ["estimate", str(tmp_path / "graph.npz"), "--board", "all", "--fit", "--strategy", "Resource"]
    assert main([*fit_all, "--plot", str(svg)]) == 0
    out = capsys.readouterr().out
    assert "pynq-z2: smallest reuse factor that fits" in out and "alveo-u250: smallest reuse factor" in out
    assert "cora-z7-07s" in out
    text = svg.read_text()
    assert text.startswith("<svg") and "limit 80%" in text
    assert all(b.name in text for b in load_board.__globals__["list_boards"]() if b.hls4ml)  # one group of bars per board
    assert main(["estimate", str(tmp_path), "--board", "cora-z7-07s", "--fit", "--limit", "0.01"]) == 0
    assert "nothing fits cora-z7-07s" in capsys.readouterr().out


# ------------------------------------------------------------------- convolutions


@pytest.mark.parametrize("rf", [1, 2, 3])
def test_conv2d_is_one_im2col_dense_unit_per_output_pixel(rf):
    g, weight = conv_graph()
    kh, kw, c, f = weight.shape
    unit = dense_graph(weight=weight.reshape(-1, f))  # same input type, same weights
    u = row(estimate(unit, "pynq-z2", reuse_factor=rf))
    est = estimate(g, "pynq-z2", reuse_factor=rf)
    r = row(est, "conv")
    p = 6 * 5
    ii_u = max(u.ii, rf)
    mux = kh * kw * c * 8 * math.ceil((p - 1) / (CONSTANTS.mux_inputs_per_lut - 1))
    # besides the unit and its window mux, the channels of its output array (a DATAFLOW design)
    assert r.detail["dataflow_channels"] == p * f
    assert r.dsp == u.dsp and r.lut == u.lut + mux + r.detail["dataflow_channel_lut"]
    assert r.ff == u.ff + kh * kw * c * 8 + r.detail["dataflow_channel_ff"]
    assert r.ii == p * ii_u and r.latency == u.latency + (p - 1) * ii_u
    assert r.detail["im2col_mux"] == mux and r.detail["positions"] == p
    # a flatten is wires (in place); the threshold works per element with per-channel thresholds
    # and writes the output port (the array behind the final flatten: no channel)
    fl, th = row(est, "flat"), row(est, "sign")
    assert (fl.lut, fl.ff, fl.dsp, fl.latency) == (0, 0, 0, 0)
    assert th.detail["live_comparators"] <= p * f and th.ff == p * f * 2 and "dataflow_channels" not in th.detail
    assert est.ii == r.ii and est.latency_cycles == sum(x.latency for x in est.rows)


def _channel_cost(elements: int, bits: int) -> tuple[int, int]:
    """(LUT, FF) of ``elements`` scalar DATAFLOW channels of ``bits``: a 2-deep FIFO in
    registers, its read select and its control, as the estimator's constants say."""
    c = CONSTANTS
    lut = elements * (math.ceil(bits * c.dataflow_channel_lut_per_bit) + c.dataflow_channel_control_lut)
    return lut, elements * (c.dataflow_channel_depth * bits + c.dataflow_channel_control_ff)


def test_io_parallel_dataflow_has_a_fifo_channel_per_element_between_layers():
    from graphs import merge3_graph

    g = merge3_graph()  # convolutions of 9 output positions: hls4ml makes the top function DATAFLOW
    rows = {r.name: r for r in estimate(g, "pynq-z2", io_type="io_parallel").rows}
    for name in ("conv1", "thr1", "cast3", "conv2", "cast2"):
        node = g[name]
        elements = int(np.prod(node.shape))
        assert rows[name].detail["dataflow_channels"] == elements
        assert (rows[name].detail["dataflow_channel_lut"], rows[name].detail["dataflow_channel_ff"]) == _channel_cost(
            elements, node.type.width
        )
    # a merge of n inputs is n - 1 two-input layers whose partial results are arrays too:
    # add3 = (cast2 + thr1) + cast3: one partial of 3x3x3; cat = ((thr1, thr1), add3), cast2:
    # partials of 3x3x6 and 3x3x9 besides its own 3x3x12
    assert rows["add3"].detail["dataflow_channels"] == 27 + 27
    assert rows["cat"].detail["dataflow_channels"] == 54 + 81 + 108
    # the flatten is in place, the dense writes the output port
    assert "dataflow_channels" not in rows["flat"].detail and "dataflow_channels" not in rows["dense"].detail
    # the same design in io_stream has streams instead
    assert not any("dataflow_channels" in r.detail for r in estimate(g, "pynq-z2", io_type="io_stream").rows)


def test_dataflow_is_what_hls4ml_picks_convolutions_of_several_positions_or_resource():
    mlp = binary_mlp()  # dense0 -> sign0 -> dense1 -> sign1 -> dense2
    pipelined = estimate(mlp, "pynq-z2", io_type="io_parallel", strategy="Latency")
    assert not any("dataflow_channels" in r.detail for r in pipelined.rows)  # one PIPELINE
    resource = {r.name: r for r in estimate(mlp, "pynq-z2", io_type="io_parallel", strategy="Resource").rows}
    assert {n for n, r in resource.items() if "dataflow_channels" in r.detail} == {"dense0", "sign0", "dense1", "sign1"}
    # hls4ml's softmax after the last dense makes its array a channel too
    with_softmax = {r.name: r for r in estimate(mlp, "pynq-z2", io_type="io_parallel", strategy="Resource", softmax=True).rows}
    assert with_softmax["dense2"].detail["dataflow_channels"] == 4
    # a convolution of one output position has n_partitions 1: no DATAFLOW under Latency
    one, _ = conv_graph(h=3, w=3, padding=((0, 0), (0, 0)))
    assert not any("dataflow_channels" in r.detail for r in estimate(one, "pynq-z2", io_type="io_parallel").rows)
    many, _ = conv_graph()
    assert "dataflow_channels" in row(estimate(many, "pynq-z2", io_type="io_parallel"), "conv").detail


def test_conv2d_strides_shrink_the_pixel_loop_not_the_unit():
    full, _ = conv_graph(sign=False)
    strided, _ = conv_graph(strides=(2, 2), padding=((1, 0), (1, 1)), sign=False)
    a, b = row(estimate(full, "pynq-z2"), "conv"), row(estimate(strided, "pynq-z2"), "conv")
    assert b.detail["positions"] == 3 * 3 and a.detail["positions"] == 30
    assert b.dsp == a.dsp and b.ii < a.ii and b.latency < a.latency


def test_conv2d_io_stream_line_buffers():
    g, weight = conv_graph(w=5)
    r = row(estimate(g, "pynq-z2", io_type="io_stream"), "conv")
    lines = (3 - 1) * 3 * 8  # (kh - 1) * C shift registers of Wx bits, 5 deep
    assert r.detail["line_buffer_lut"] == lines * math.ceil(5 / CONSTANTS.srl_bits_per_lut)
    assert r.ii == 6 * 5 and r.bram18 == 0  # one input pixel per cycle
    # the pixel and stride counters (pX, pY, sX, sY: C ints), an adder and a compare each per bit
    assert r.detail["window_counter_lut"] == 4 * 32 * 2
    par = row(estimate(g, "pynq-z2", io_type="io_parallel"), "conv")
    assert "window_counter_lut" not in par.detail
    wide, _ = conv_graph(h=4, w=CONSTANTS.line_buffer_srl_max_depth + 1, sign=False)
    rw = row(estimate(wide, "pynq-z2", io_type="io_stream"), "conv")
    assert rw.bram18 > 0 and rw.detail["line_buffer_lut"] == 0
    th = row(estimate(g, "pynq-z2", io_type="io_stream"), "sign")  # one pixel per cycle: C units
    assert th.ii == 30 and th.ff <= 4 * 2 + 30 * 4 * 2


def test_conv2d_reuse_factor_types_and_fit():
    g, _ = conv_graph(sign=False)
    est = estimate(g, "pynq-z2", reuse_factor={"conv": 4})
    assert row(est, "conv").detail["reuse_factor"] == 4
    wide = estimate(g, "pynq-z2", types={"conv": {"accum": "fixed<24,10>"}})
    assert row(wide, "conv").detail["accumulator_bits"] == 24
    fitted = __import__("edgebnn.estimate", fromlist=["fit"]).fit(g, "pynq-z2")
    assert fitted.fits


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_maxpool_costs_comparators_and_no_dsp(io_type):
    from edgebnn.graph import maxpool2d_node

    inp = input_node("input", (6, 6, 3), FixedType.from_string("fixed<8,3>"))
    pool = maxpool2d_node("pool", inp, (2, 2))
    graph = Graph("pool", [inp, pool, flatten_node("flat", pool)])
    r = row(estimate(graph, "pynq-z2", io_type=io_type), "pool")
    assert r.dsp == 0 and r.op == "maxpool2d"
    per_window = 3  # 2*2 - 1 comparators of 8 bits
    comparators = (3 if io_type == "io_stream" else 3 * 3 * 3) * per_window
    # io_parallel: nnet::max's loop, a chain of 3 compare levels; io_stream: reduce's tree of 2
    assert r.detail["comparators"] == comparators and r.detail["compare_levels"] == (2 if io_type == "io_stream" else 3)
    assert r.lut >= comparators * 8 * CONSTANTS.lut_per_compare_bit
    if io_type == "io_stream":
        assert r.detail["line_buffer_lut"] > 0 and r.ii == 36


def test_io_stream_flatten_before_a_dense_is_an_alias():
    # hls4ml 1.3.0 writes `auto& flat_out = pool_out;` for it (checked on an exported project):
    # the dense reads the pooled pixel stream, so the flatten has no process, cycles or FIFO
    from edgebnn.graph import maxpool2d_node

    inp = input_node("input", (6, 6, 3), FixedType.from_string("fixed<8,3>"))
    pool = maxpool2d_node("pool", inp, (2, 2))
    flat = flatten_node("flat", pool)
    dense = dense_node("dense", flat, (np.arange(27 * 4).reshape(27, 4) % 7) + 1, W8)
    est = estimate(Graph("pool_dense", [inp, pool, flat, dense]), "pynq-z2", io_type="io_stream")
    r = row(est, "flat")
    assert (r.lut, r.ff, r.bram18, r.latency, r.ii) == (0, 0, 0, 0, 1) and r.detail["stream_alias"]
    # a flatten that ends the design is hls4ml's repack: a cycle per pixel and its FIFO
    end = row(estimate(Graph("pool", [inp, pool, flat]), "pynq-z2", io_type="io_stream"), "flat")
    assert end.latency > 9 and end.ff > 0 and "stream_alias" not in end.detail


def test_a_target_is_the_same_as_its_options():
    from edgebnn.backends.target import Target

    g = dense_graph(n_in=32, n_out=16, input_type="fixed<8,3>", weight_type=FixedType(6, 2))
    t = Target(board=load_board("zcu104"), strategy="Resource", reuse_factor=4, io_type="io_stream", clock_period_ns=4)
    by_target = estimate(g, target=t)
    by_options = estimate(g, "zcu104", strategy="Resource", reuse_factor=4, io_type="io_stream", clock_period=4)
    assert by_target.to_dict() == by_options.to_dict()
    # the Vivado backend is scheduled by Vivado HLS unless the target says otherwise
    assert estimate(g, target=t.replace(backend="Vivado")).hls_tool == "vivado_hls"
    assert estimate(g, target=t.replace(backend="Vivado", hls_tool="vitis")).hls_tool == "vitis_hls"
    # another board: its clock where the target gives none, the target's where it does
    assert estimate(g, "pynq-z2", target=t.replace(clock_period_ns=None)).clock_period_ns == 10
    assert estimate(g, "pynq-z2", target=t).clock_period_ns == 4
    with pytest.raises(EdgebnnError, match=r"give either target or its options \(strategy\), not both"):
        estimate(g, target=t, strategy="Latency")
    with pytest.raises(EstimateError, match="estimate needs a board"):
        estimate(g, target=Target())


def test_fit_takes_a_target_and_advises_only_what_it_was_not_given():
    from edgebnn.backends.target import Target

    g = dense_graph(n_in=256, n_out=256, input_type="fixed<16,6>", weight_type=FixedType(12, 2))
    found = fit(g, target=Target(board=load_board("cora-z7-07s"), strategy="Resource"))
    assert not found.fits and "try narrower weights or a larger board" in found.reason
    assert "Resource strategy" in fit(g, "cora-z7-07s").reason


def test_fit_under_resource_tries_only_reuse_factors_every_node_keeps():
    """Export refuses a reuse factor hls4ml's Resource strategy would snap, so fit tries only
    those valid for every weighted node (16x12, 12x8 and 8x4 share 1, 2 and 4)."""
    from graphs import calibrated_mlp

    found = fit(calibrated_mlp(), "cora-z7-07s", strategy="Resource", limit=0.0001)
    assert [rf for rf, _ in found.tried] == [1, 2, 4] and found.reuse_factor is None


def test_io_stream_latency_is_the_slowest_process_plus_the_others_tails():
    g, _ = conv_graph(h=12, w=12)
    est = estimate(g, "pynq-z2", io_type="io_stream")
    slowest = max(est.rows, key=lambda r: r.ii)
    assert slowest.op == "conv2d" and slowest.ii > 100  # a pixel per cycle over the input
    tails = [r.latency if r.op == "dense" else max(r.latency - r.ii, 1) for r in est.rows if r is not slowest]
    assert est.latency_cycles == slowest.latency + sum(tails)
    assert est.latency_cycles < sum(r.latency for r in est.rows)  # DATAFLOW overlaps the layers
    par = estimate(g, "pynq-z2")
    assert par.latency_cycles == sum(r.latency for r in par.rows)


def test_io_stream_fifos_are_registers_srl_or_bram_by_depth():
    from edgebnn.backends.hls4ml.cost.blocks import _fifo

    c = CONSTANTS
    assert _fifo(1, 64, c) == (0, 64, 0)
    assert _fifo(c.stream_fifo_srl_max_depth, 64, c) == (64 * c.stream_fifo_srl_max_depth // 32, 64, 0)
    assert _fifo(676, 64, c) == (0, 0, 4)  # 676 x 64 bits: four 1Kx18 RAMB18
    g, _ = conv_graph(h=24, w=24)
    est = estimate(g, "pynq-z2", io_type="io_stream")
    conv = next(r for r in est.rows if r.op == "conv2d")
    assert conv.detail["stream_fifo_depth"] == 24 * 24 and conv.bram18 >= 1
