"""fit's search (issue 13): the reuse-factor-independent work done once per node, the Resource
candidates bisected on their DSPs, and the answer exactly the straightforward search's: every
candidate in ascending order estimated from scratch, the first that fits."""

import random

import graphs as G
import pytest
from graphs import conv_graph, dense_graph

from edgebnn.backends.hls4ml.cost import WEIGHTED_OPS
from edgebnn.backends.hls4ml.cost.blocks import _matrix_shape, valid_reuse_factors
from edgebnn.backends.target import Target
from edgebnn.boards import load_board
from edgebnn.estimate import CONSTANTS, estimate, fit
from edgebnn.estimate.core import _estimate, _prepare
from edgebnn.fixed import FixedType


def exhaustive_fit(graph, board, strategy="Latency", limit=0.8, **options):
    """The search as fit did it before issue 13: each candidate in ascending order, estimated
    by a fresh estimate() call; (reuse factor or None, tried, the estimate, the largest's)."""
    dense = [n for n in graph.compute_nodes() if n.op in WEIGHTED_OPS]
    valid = [set(valid_reuse_factors(*_matrix_shape(n))) for n in dense]
    if strategy == "Resource" and valid:
        valid = [set.intersection(*valid) | {1}]
    candidates = sorted(set().union(*valid)) or [1]
    tried = []
    for rf in candidates:
        est = estimate(graph, board, strategy=strategy, reuse_factor=rf, utilization_limit=limit, **options)
        tried.append((rf, est.fits))
        if est.fits:
            return rf, tuple(tried), est, None
    return None, tuple(tried), None, est


GRAPHS = {
    "binary_mlp": lambda: G.binary_mlp(sizes=(96, 64, 48, 10), seed=3),
    "binary_mlp_levels": lambda: G.binary_mlp(sizes=(32, 24, 16, 6), out_levels="fixed<4,2>"),
    "dense16": lambda: dense_graph(n_in=64, n_out=64, input_type="fixed<16,6>", weight_type=FixedType(16, 2)),
    "dense_zeros": lambda: dense_graph(40, 30, weight_type=FixedType(4, 2), input_type="fixed<12,4>", zero_fraction=0.3),
    # under Resource on zcu104 at 10 %: only reuse factor 40 fits (not 30, not 60); the DSPs fit from 30 on
    "lonely_fit": lambda: dense_graph(n_in=120, n_out=36, input_type="fixed<16,4>", weight_type=FixedType(7, 2)),
    # under Resource on zcu102: 1 fits, 2 does not, 3 and the rest do
    # 9-bit inputs: shared multipliers with weights in memory (Resource, R > 1) go to DSPs only when
    # their wider operand has more than 8 bits (general_mult_lut_max_bits)
    "dense8": lambda: dense_graph(n_in=120, n_out=36, input_type="fixed<9,3>", weight_type=FixedType(8, 2)),
    "conv": lambda: conv_graph(c=8, f=16, weight_type=FixedType(8, 2), input_type="fixed<10,4>")[0],
    "every_op": G.every_op_graph,
    "depthwise": G.depthwise_graph,
    "ops_1d": G.ops_1d_graph,
    "dag": G.dag_graph,
    "merge3": G.merge3_graph,
    "calibrated": G.calibrated_mlp,
    "conv_net": G.conv_net,
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("strategy", ["Latency", "Resource"])
def test_fit_is_the_straightforward_search(name, strategy):
    graph = GRAPHS[name]()
    for board in ["pynq-z2", "cora-z7-07s", "zcu104", "zcu102"]:
        for limit in [0.8, 0.1, 0.01]:
            for io_type in ["io_parallel", "io_stream"]:
                rf, tried, est, last = exhaustive_fit(graph, board, strategy, limit, io_type=io_type)
                found = fit(graph, board, strategy=strategy, limit=limit, io_type=io_type)
                where = (name, strategy, board, limit, io_type)
                assert (found.reuse_factor, found.tried) == (rf, tried), where
                if rf is None:
                    assert found.estimate is None and f"even the largest reuse factor {last.reuse_factor} needs" in found.reason
                    over = [f"{k.upper()} {v:.0f}%" for k, v in last.utilization.items() if v > 100 * limit]
                    assert found.reason.split(" needs ")[1].startswith(", ".join(over) + " of the board; try "), where
                else:
                    assert found.estimate.to_dict() == est.to_dict(), where


def test_the_search_finds_a_lonely_fit_past_the_bisection_and_skips_candidates():
    g = GRAPHS["lonely_fit"]()
    seen = []
    found = fit(g, "zcu104", strategy="Resource", limit=0.1, progress=lambda rf, fits: seen.append((rf, fits)))
    rf, tried, est, _ = exhaustive_fit(g, "zcu104", "Resource", 0.1)
    assert found.reuse_factor == rf == 40 and found.tried == tried and found.estimate.to_dict() == est.to_dict()
    assert [t for t in tried if t[1]] == [(40, True)]
    assert not estimate(g, "zcu104", strategy="Resource", reuse_factor=60, utilization_limit=0.1).fits  # not monotone
    # the bisection estimated fewer candidates than the 14 up to 40 (some probes may lie past it, where
    # larger factors fit again: a Resource dense's operand muxes stop growing once R passes n_in = 120);
    # progress saw each once, ending at 40, and none below 40 fits
    assert len(seen) < len(tried) and len({r for r, _ in seen}) == len(seen) and seen[-1] == (40, True)
    assert all(not ok for r, ok in seen if r < 40)
    assert not estimate(g, "zcu104", strategy="Resource", reuse_factor=120, utilization_limit=0.1).fits
    assert estimate(g, "zcu104", strategy="Resource", reuse_factor=240, utilization_limit=0.1).fits
    # a design that fits only from a non-monotone point on: 1 fits, 2 does not, 3 does
    g8 = GRAPHS["dense8"]()
    pattern = [estimate(g8, "zcu102", strategy="Resource", reuse_factor=r).fits for r in (1, 2, 3)]
    assert pattern == [True, False, True] and fit(g8, "zcu102", strategy="Resource").reuse_factor == 1


def test_a_shared_build_estimates_any_order_as_fresh_calls():
    """What fit reuses between candidates (the build's memo) changes no estimate, whatever
    order the reuse factors come in (the bisection jumps) and however often."""
    for name in ["dense_zeros", "conv", "depthwise", "dag", "calibrated"]:
        g = GRAPHS[name]()
        for strategy in ["Latency", "Resource"]:
            io_type = "io_stream" if name == "dag" else "io_parallel"
            target = Target(board=load_board("pynq-z2"), strategy=strategy, io_type=io_type)
            g2, t, ctx, widths = _prepare(g, None, target, 0.8, CONSTANTS, None, "auto", None, "stable")
            rfs = sorted({r for n in g.compute_nodes() if n.op in WEIGHTED_OPS for r in valid_reuse_factors(*_matrix_shape(n))})
            order = rfs[:12] * 2 + [3, 7]
            random.Random(0).shuffle(order)
            for r in order:
                shared = _estimate(g2, t.replace(reuse_factor=r), ctx, widths, 0.8, None, "stable")
                assert shared.to_dict() == estimate(g, target=t.replace(reuse_factor=r)).to_dict(), (name, strategy, r)


def test_fit_advises_only_what_it_was_not_given_nor_cannot_help():
    binary = G.binary_mlp(sizes=(96, 64, 48, 10))
    latency = fit(binary, "cora-z7-07s", limit=0.001)
    assert latency.reason.endswith("; try the Resource strategy or a larger board")
    resource = fit(binary, "cora-z7-07s", strategy="Resource", limit=0.001)
    assert resource.reason.endswith("; try a larger board")  # given Resource; binary weights are as narrow as they go
    wide = GRAPHS["dense16"]()
    advice = "; try the Resource strategy, narrower weights or a larger board"
    assert fit(wide, "cora-z7-07s", limit=0.001).reason.endswith(advice)
    assert fit(wide, target=Target(board=load_board("cora-z7-07s"), strategy="resource"), limit=0.001).reason.endswith(
        "; try narrower weights or a larger board"
    )


def test_fit_reports_progress_for_each_reuse_factor_it_estimates():
    g = GRAPHS["dense16"]()
    seen = []
    # (under the Latency strategy no reuse factor fits this 16-bit 64x64 dense on the Pynq-Z2:
    # the unrolled code keeps every adder tree whatever the reuse factor; the ZCU104 has room)
    found = fit(g, "zcu104", progress=lambda rf, fits: seen.append((rf, fits)))
    assert seen == list(found.tried) and seen[-1] == (found.reuse_factor, True)


def test_cli_fit_shows_progress_on_a_terminal_and_advises_only_what_was_not_given(tmp_path, capsys, monkeypatch):
    import sys

    from edgebnn.cli import main

    GRAPHS["dense16"]().save(tmp_path / "graph.npz")
    args = ["estimate", str(tmp_path / "graph.npz"), "--board", "cora-z7-07s", "--fit", "--limit", "0.01"]
    assert main([*args, "--strategy", "Resource"]) == 0
    out, err = capsys.readouterr()
    assert "nothing fits cora-z7-07s" in out and "; try narrower weights or a larger board" in out and err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal, outside CI (where bars are off)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "; try the Resource strategy, narrower weights or a larger board" in out
    assert "cora-z7-07s: reuse factor 1 does not fit" in err and err.endswith("\r\033[K")


def _margin_exhaustive(graph, board, strategy, margin, limit=0.8):
    """The first candidate in ascending order whose estimate fits and whose intervals' tops
    times 1 + margin are within the limit, each estimated afresh."""
    dense = [n for n in graph.compute_nodes() if n.op in WEIGHTED_OPS]
    valid = [set(valid_reuse_factors(*_matrix_shape(n))) for n in dense]
    if strategy == "Resource":
        valid = [set.intersection(*valid) | {1}]
    for rf in sorted(set().union(*valid)):
        est = estimate(graph, board, strategy=strategy, reuse_factor=rf, utilization_limit=limit)
        have = est.available
        tops = {k: hi * (1 + margin) for k, (_, hi) in est.intervals.items() if k != "latency"}
        if est.fits and all(v == 0 or (have[k] and v <= limit * have[k]) for k, v in tops.items()):
            return rf
    return None


@pytest.mark.parametrize("strategy", ["Latency", "Resource"])
def test_fit_with_a_margin_refuses_a_design_whose_interval_crosses_the_budget(strategy):
    graph = GRAPHS["dense16"]()
    # under Latency the Pynq-Z2 has no room for this dense at any reuse factor (its adder trees
    # stay whole, and the waiting products and operand muxes grow with the reuse factor): an
    # Alveo U250, where the plain answer is reuse factor 1
    board = load_board("alveo-u250" if strategy == "Latency" else "pynq-z2")
    # a limit the plain answer just meets: the top of its intervals lies above it
    first = fit(graph, board, strategy=strategy).estimate
    limit = max(first.utilization.values()) / 100 + 1e-9
    plain = fit(graph, board, strategy=strategy, limit=limit)
    tight = fit(graph, board, strategy=strategy, limit=limit, margin=0.0)
    wide = fit(graph, board, strategy=strategy, limit=limit, margin=0.5)
    assert plain.reuse_factor == exhaustive_fit(graph, board, strategy, limit)[0]
    assert tight.reuse_factor == _margin_exhaustive(graph, board, strategy, 0.0, limit)
    assert wide.reuse_factor == _margin_exhaustive(graph, board, strategy, 0.5, limit)
    # the plain answer fits as estimated, but the top of an interval crosses the budget
    assert plain.estimate.fits and not plain.estimate.fits_with_margin(0.0)
    if tight.fits:
        assert tight.reuse_factor > plain.reuse_factor and tight.estimate.fits_with_margin(0.0)
        assert "margin" in str(tight)
    else:  # nothing fits at the top of its interval: the reason says so and names the resource
        assert "with the calibrated interval and a margin of 0%" in tight.reason and "up to" in tight.reason
    assert wide.reuse_factor is None or (tight.fits and wide.reuse_factor >= tight.reuse_factor)


def test_fit_margin_is_a_fraction():
    with pytest.raises(ValueError, match="margin must be a fraction >= 0"):
        fit(GRAPHS["dense16"](), "pynq-z2", margin=-0.1)


def test_an_estimate_carries_its_family_interval():
    from edgebnn.estimate.intervals import INTERVALS

    est = estimate(GRAPHS["dense16"](), "pynq-z2")
    assert est.family == "dense"
    lo, hi = INTERVALS["dense"]["lut"]
    assert est.intervals["lut"] == (est.totals["lut"] * (1 + lo), est.totals["lut"] * (1 + hi))
    assert est.intervals["latency"][0] <= est.latency_cycles <= est.intervals["latency"][1]
    assert "8 in 10 published dense designs lay within: LUT" in est.table()
    assert est.to_dict()["intervals"]["dsp"] == list(est.intervals["dsp"])
    conv = estimate(conv_graph()[0], "pynq-z2")
    assert conv.family == "conv" and conv.intervals["ff"][1] == conv.totals["ff"] * (1 + INTERVALS["conv"]["ff"][1])


def test_cli_margin_goes_with_fit_and_refuses_what_crosses_the_budget(tmp_path, capsys):
    from edgebnn.cli import main

    GRAPHS["dense16"]().save(tmp_path / "graph.npz")
    args = ["estimate", str(tmp_path / "graph.npz"), "--board", "pynq-z2", "--strategy", "Resource"]
    assert main([*args, "--margin", "0.1"]) == 2
    assert "--margin applies to --fit only" in capsys.readouterr().err
    assert main([*args, "--fit", "--margin", "-1"]) == 2
    assert "--margin must be a fraction >= 0" in capsys.readouterr().err
    assert main([*args, "--fit", "--margin", "19"]) == 0  # twenty times the interval's top fits nowhere
    out = capsys.readouterr().out
    assert "nothing fits pynq-z2 under 80% of each resource with the calibrated interval and a margin of 1900%" in out
    assert main([*args, "--fit", "--margin", "0"]) == 0
    assert "(interval top + 0% margin)" in capsys.readouterr().out
