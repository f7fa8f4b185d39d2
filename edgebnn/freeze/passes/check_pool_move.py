"""A MaxPooling2D or MaxPooling1D moved after a requantization (passes/move_after_quantizer) is refused unless
the move is exact.

Keras computes ``h(max_i f(x_i))`` with ``f`` the float ops before the pool and ``h`` the rest
and the quantizer; the graph computes ``max_i g(x_i)`` with ``g = h(f)`` (the requant node).
Both agree for every window exactly when ``g`` is non-decreasing in the order of ``f``'s
values, which is checked on every accumulator value of every channel (Keras replayed on them).
A cast must not wrap.
"""

from __future__ import annotations

import numpy as np

from ...graph import _on_grid
from .. import replay
from ..items import FreezeError, Step, where
from .move_after_quantizer import MAXPOOLS
from .thresholds import bisectable, bisects, check_enumerable, check_exact_codes, enumerable, grid, levels_at


def run(step: Step, freezing) -> None:
    """Check a moved maxpool2d / maxpool1d step against its requant node, before its own node is built."""
    if step.kind not in MAXPOOLS or step.moved_from is None:
        return
    req = freezing.node(step.moved_from.name)
    check(step, req, freezing.node(req.inputs[0]), freezing.jit, freezing.node, freezing)


def check(pool: Step, req, acc, jit: bool, source=None, freezing=None) -> None:
    """Refuse moving ``pool`` after the requantization ``req`` of ``acc`` unless it is exact, on
    every reachable accumulator value (``source``: node name -> node, for the lattice; every
    code without it)."""
    step = pool.moved_from
    advice = (
        f"so the maximum cannot move after the quantizer exactly; pool after the activation "
        f"(put {pool.name!r} after {step.name!r}) or directly on the accumulator before the normalization"
    )
    if req.op == "cast":  # float ops are relus (non-decreasing): the conversion must be non-decreasing
        t = req.type
        lo, hi = acc.lo, acc.hi
        if req.attrs["relu"]:
            lo, hi = np.maximum(lo, 0.0), np.maximum(hi, 0.0)
        wraps = not (t.contains(_on_grid(lo, t)) and t.contains(_on_grid(hi, t)))
        if wraps and t.overflow not in ("SAT", "SAT_SYM"):
            raise FreezeError(
                f"{where(pool.layer)} sits before the quantizer of {step.name!r}, whose conversion onto "
                f"{t} overflows with {t.overflow} and is not monotone, {advice}"
            )
        return
    if bisects(step, acc) or not enumerable(acc):
        check_exact_codes(step, acc, freezing)
        if not bisectable(step):
            check_enumerable(step, acc, freezing)
        _check_monotone_move(pool, req, acc, jit, advice)
        return
    codes, values = grid(acc, source)
    before = replay.evaluate(step, values, jit, rank=len(acc.shape), stop=pool.ops_before, quantize=False)
    g = levels_at(req, codes)
    bad = [c for c in range(codes.shape[1]) if np.any(np.diff(g[np.argsort(before[:, c], kind="stable"), c]) < 0)]
    if bad:
        ops_before = ", ".join(op.label for op in step.float_ops[: pool.ops_before])
        raise FreezeError(
            f"{where(pool.layer)} sits between {ops_before} and the quantizer of {step.name!r}, whose requantization "
            f"decreases in channel(s) {bad[:8]} (e.g. a negative BatchNormalization gamma after the pool), {advice}"
        )


def _check_monotone_move(pool: Step, req, acc, jit: bool, advice: str) -> None:
    """The check for an accumulator too wide to enumerate, whose step is provably monotone
    (``thresholds.bisectable``): the float ops before the pool run one way per channel, found from
    the two ends of its range, and the threshold levels must follow that way."""
    step = pool.moved_from
    ends = np.stack([np.broadcast_to(acc.lo, (acc.shape[-1],)), np.broadcast_to(acc.hi, (acc.shape[-1],))]).astype(np.float32)
    before = replay.evaluate(step, ends, jit, rank=len(acc.shape), stop=pool.ops_before, quantize=False)
    rising = before[1] >= before[0]
    lv = req.params["levels"]
    d = np.diff(lv, axis=1)
    follows = np.where(rising, np.all(d >= 0, axis=1), np.all(d <= 0, axis=1))
    bad = [int(c) for c in np.nonzero(~follows)[0]]
    if bad:
        ops_before = ", ".join(op.label for op in step.float_ops[: pool.ops_before])
        raise FreezeError(
            f"{where(pool.layer)} sits between {ops_before} and the quantizer of {step.name!r}, whose requantization "
            f"decreases in channel(s) {bad[:8]} (e.g. a negative BatchNormalization gamma after the pool), {advice}"
        )
