"""The smallest reuse factor with which a graph fits a board: :func:`fit` and its :class:`Fit`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from edgebnn.backends.hls4ml.cost import WEIGHTED_OPS
from edgebnn.backends.hls4ml.cost.blocks import _matrix_shape, valid_reuse_factors
from edgebnn.backends.hls4ml.cost.context import CONSTANTS, EstimateError, ModelConstants
from edgebnn.backends.target import Target, make_target

from .core import _estimate, _load, _prepare
from .intervals import bounds
from .report import Estimate


def fit(
    graph,
    board=None,
    strategy: str | None = None,
    limit: float = 0.8,
    io_type: str | None = None,
    clock_period: float | None = None,
    types: Mapping | None = None,
    multipliers: str = "auto",
    constants: ModelConstants = CONSTANTS,
    hls_tool: str | None = None,
    softmax=None,
    target: Target | None = None,
    progress: Callable[[int, bool], None] | None = None,
    margin: float | None = None,
) -> Fit:
    """The smallest reuse factor (the fastest design) with which ``graph`` fits ``board``.

    The other options are one :class:`~edgebnn.backends.target.Target` (``target``, whose reuse
    factor is the one searched, or its options here), as for :func:`~edgebnn.estimate.estimate`.
    Candidates are the reuse factors hls4ml keeps as given for some dense node of the graph
    (:func:`valid_reuse_factors`; others would be snapped to one of these), under the Resource
    strategy for every one of them (export refuses any other), with one model-wide reuse
    factor; a design fits when every resource is at most ``limit`` of the board. The answer is
    the first candidate in ascending order that fits, as trying them all in turn finds it; the
    work that does not depend on the reuse factor is done once (``_Context.memo``), and under
    the Resource strategy the candidates whose DSPs alone cannot fit are skipped by a
    galloping bisection (:func:`_first_within_dsp`). ``progress``, when given, is called with
    each reuse factor estimated and whether it fits. With ``margin`` (a fraction >= 0) a candidate
    fits only when, besides its estimate, the top of every resource's calibrated interval
    (:attr:`Estimate.intervals`, from the validation residuals) times ``1 + margin`` is within
    ``limit`` (:meth:`Estimate.fits_with_margin`): a design whose interval crosses the budget is
    refused. Returns a :class:`Fit`; when nothing fits, its
    ``reuse_factor`` and ``estimate`` are None and ``reason`` says what is still too big at
    the largest reuse factor and what else to try (not what was given).
    """
    if margin is not None and (isinstance(margin, bool) or not isinstance(margin, (int, float)) or not margin >= 0):
        raise EstimateError(f"margin must be a fraction >= 0 (0.1 for 10%), got {margin!r}")
    graph = _load(graph)
    target = make_target(target, strategy=strategy, io_type=io_type, clock_period_ns=clock_period, hls_tool=hls_tool)
    graph, target, ctx, widths = _prepare(graph, board, target, limit, constants, types, multipliers, softmax, "stable")
    dense = [n for n in graph.compute_nodes() if n.op in WEIGHTED_OPS]
    valid = [set(valid_reuse_factors(*_matrix_shape(n))) for n in dense]
    if target.strategy == "Resource" and valid:
        # export refuses a reuse factor hls4ml would snap: one valid for every weighted node
        valid = [set.intersection(*valid) | {1}]
    candidates = sorted(set().union(*valid)) or [1]
    done: dict[int, Estimate] = {}

    def ok(e: Estimate) -> bool:
        return e.fits and (margin is None or e.fits_with_margin(margin))

    def at(i: int) -> Estimate:
        rf = candidates[i]
        if rf not in done:
            done[rf] = _estimate(graph, target.replace(reuse_factor=rf), ctx, widths, limit, softmax, "stable")
            if progress is not None:
                progress(rf, ok(done[rf]))
        return done[rf]

    start = 0
    if target.strategy == "Resource" and len(candidates) > 2 and not ok(at(0)):
        # with a margin the DSPs must fit at the top of their interval too: a tighter bound
        grow = 1.0 if margin is None else max(1.0, (1 + bounds(at(0).family, "dsp")[1]) * (1 + margin))
        start = _first_within_dsp(at, len(candidates), ctx.board.dsp * limit / grow)
    for i in range(start, len(candidates)):
        if ok(at(i)):
            # every candidate before it does not fit: tried in turn, or skipped as proven not to
            tried = tuple((rf, False) for rf in candidates[:i]) + ((candidates[i], True),)
            return Fit(candidates[i], at(i), tried, "", margin)
    last = at(len(candidates) - 1)
    over = {k: f"{v:.0f}%" for k, v in last.utilization.items() if v > 100 * limit}
    if not over and margin is not None:  # it fits as estimated; the top of its interval does not
        have = last.available
        over = {
            k: f"up to {100 * hi * (1 + margin) / have[k]:.0f}%" if have[k] else "some"
            for k, (_, hi) in last.intervals.items()
            if k != "latency" and hi * (1 + margin) > limit * have[k]
        }
    try_ = [] if target.strategy == "Resource" else ["the Resource strategy"]
    if any(widths[n.name]["weight"].width > constants.free_operand_bits for n in dense):
        try_.append("narrower weights")  # binary or ternary weights are as narrow as they go
    try_.append("a larger board")
    with_margin = "" if margin is None else f" with the calibrated interval and a margin of {100 * margin:g}%"
    reason = (
        f"nothing fits {last.board.name} under {100 * limit:g}% of each resource{with_margin}: even the largest "
        f"reuse factor {candidates[-1]} needs "
        + ", ".join(f"{k.upper()} {v}" for k, v in over.items())
        + " of the board; try "
        + (", ".join(try_[:-1]) + " or " if len(try_) > 1 else "")
        + try_[-1]
    )
    return Fit(None, None, tuple((rf, False) for rf in candidates), reason, margin)


def _first_within_dsp(at: Callable[[int], Estimate], n: int, allowed: float) -> int:
    """Under the Resource strategy, the index of the first candidate from 1 on (reuse factors
    above 1) whose DSPs fit (``dsp_needed <= allowed``), ``n`` if none does: a galloping search
    (indices 1, 2, 4, ... until one fits, then bisection between the last two), so a design
    whose DSPs fit from the start (binary weights use none) costs one estimate, which the scan
    that follows reuses.

    A design fits only when its ``dsp_needed`` is within ``allowed`` (:attr:`Estimate.fits`), and
    over the candidates above 1 ``dsp_needed`` never grows with the reuse factor ``R``, so the
    ones before the index found cannot fit. Why it never grows: every weighted node has its
    weights in memory (``R > 1``; ``R`` valid for every node, so none is snapped, perhaps to 1),
    all ``N = n_in * n_out`` products are real multipliers or none are (binary/ternary operands),
    ``multiplier_limit = ceil(N / R)`` instances are built and the DSPs are ``ceil(N / R)`` times
    the slices of one declared-width product (or 0): non-increasing in ``R``. The nodes without
    weights and the softmax do not depend on ``R``, nor does which outputs are live (every
    dense reads all of its inputs from memory). Nothing else is monotone in ``R`` (LUT: the
    ``R:1`` operand muxes, ``(N / R) * Wx * ceil((R - 1) / 3)``, grow from ``R = 4`` to 5;
    BRAM18: a memory 640 words deep takes the 1Kx18 shape, more blocks than a 512-deep one of
    the same bits; under the Latency strategy even ``multiplier_limit = ceil(N / R) -
    floor(zeros / R)`` is not: 1 at ``R = 5`` and 2 at ``R = 6`` for N = 10, 5 zeros), so the
    candidates from that index on are tried in turn."""
    below, i = 0, 1  # the indices 1 .. below do not fit
    while i < n and at(i).dsp_needed > allowed:
        below, i = i, 2 * i
    lo, hi = below + 1, min(i, n)  # the first index whose DSPs fit is in [lo, hi] (n: none)
    while lo < hi:
        mid = (lo + hi) // 2
        if at(mid).dsp_needed <= allowed:
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclasses.dataclass(frozen=True)
class Fit:
    """Result of :func:`fit`: the reuse factor and its estimate, or None and the reason."""

    reuse_factor: int | None
    estimate: Estimate | None
    tried: tuple[tuple[int, bool], ...]
    reason: str
    margin: float | None = None  # the fit took every resource at the top of its interval times 1 + margin

    @property
    def fits(self) -> bool:
        return self.reuse_factor is not None

    def __str__(self) -> str:
        if not self.fits:
            return self.reason
        e = self.estimate
        with_margin = "" if self.margin is None else f" (interval top + {100 * self.margin:g}% margin)"
        return (
            f"smallest reuse factor that fits {e.board.name} under {100 * e.utilization_limit:g}%{with_margin}: "
            f"{self.reuse_factor} (latency {_count(e.latency_cycles, 'cycle')}, II {e.ii}; tried "
            f"{_count(len(self.tried), 'value')})"
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
