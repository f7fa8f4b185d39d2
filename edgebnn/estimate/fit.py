"""The smallest reuse factor with which a graph fits a board: :func:`fit` and its :class:`Fit`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from edgebnn.backends.hls4ml.cost import WEIGHTED_OPS
from edgebnn.backends.hls4ml.cost.blocks import _matrix_shape, valid_reuse_factors
from edgebnn.backends.hls4ml.cost.context import CONSTANTS, ModelConstants
from edgebnn.backends.target import Target, make_target
from edgebnn.graph import Graph

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
) -> Fit:
    """The smallest reuse factor (the fastest design) with which ``graph`` fits ``board``.

    The other options are one :class:`~edgebnn.backends.target.Target` (``target``, whose reuse
    factor is the one searched, or its options here), as for :func:`~edgebnn.estimate.estimate`.
    Candidates are the reuse factors hls4ml keeps as given for some dense node of the graph
    (:func:`valid_reuse_factors`; others would be snapped to one of these), under the Resource
    strategy for every one of them (export refuses any other), tried in
    ascending order with one model-wide reuse factor; a design fits when every resource is
    at most ``limit`` of the board. Returns a :class:`Fit`; when nothing fits, its
    ``reuse_factor`` and ``estimate`` are None and ``reason`` says what is still too big at
    the largest reuse factor.
    """
    from . import estimate  # the package's function; the package imports this module

    if isinstance(graph, (str, os.PathLike)):
        graph = Graph.load(graph)
    dense = [n for n in graph.compute_nodes() if n.op in WEIGHTED_OPS]
    target = make_target(target, strategy=strategy, io_type=io_type, clock_period_ns=clock_period, hls_tool=hls_tool)
    valid = [set(valid_reuse_factors(*_matrix_shape(n))) for n in dense]
    if target.strategy == "Resource" and valid:
        # export refuses a reuse factor hls4ml would snap: one valid for every weighted node
        valid = [set.intersection(*valid) | {1}]
    candidates = sorted(set().union(*valid)) or [1]
    kwargs = dict(utilization_limit=limit, types=types, multipliers=multipliers, constants=constants, softmax=softmax)
    tried = []
    last = None
    for rf in candidates:
        est = estimate(graph, board, target=target.replace(reuse_factor=rf), **kwargs)
        tried.append((rf, est.fits))
        if est.fits:
            return Fit(rf, est, tuple(tried), "")
        last = est
    over = {k: f"{v:.0f}%" for k, v in last.utilization.items() if v > 100 * limit}
    reason = (
        f"nothing fits {last.board.name} under {100 * limit:g}% of each resource: even the largest "
        f"reuse factor {candidates[-1]} needs "
        + ", ".join(f"{k.upper()} {v}" for k, v in over.items())
        + " of the board; try "
        + ("" if target.strategy == "Resource" else "the Resource strategy, ")
        + "narrower weights or a larger board"
    )
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
        return (
            f"smallest reuse factor that fits {e.board.name} under {100 * e.utilization_limit:g}%: "
            f"{self.reuse_factor} (latency {e.latency_cycles} cycles, II {e.ii}; tried "
            f"{len(self.tried)} value(s))"
        )
