"""Thresholds of a requant step, derived by replaying Keras: every integer value the
accumulator can take, per channel, goes through the model's own float ops and quantizer, and
the thresholds are where the quantized output changes. Ties, float32 rounding, negative or
zero gamma therefore come out exactly as Keras computes them.

Only reachable values are enumerated: per channel those of the accumulator's lattice
``base + k * step`` (``edgebnn.graph.lattice``: a sum of n terms of +-1 is congruent to n
modulo 2, a common factor of the weight codes, a bias offset) within its bounds. Each threshold
sits on a reachable value, and a level the quantizer would give only between lattice points
costs no threshold. The node records the lattice (``params['base']``, ``params['step']``)."""

from __future__ import annotations

import contextlib

import numpy as np

from ...graph import threshold_node
from ...graph.lattice import lattice, on_lattice
from .. import forms, replay
from ..items import MAX_ENUMERATION, FreezeError, Step


def grid(src, source=None):
    """(codes, values): every reachable accumulator code of ``src`` per channel, as (span,
    channels) rows (short channels repeat their top code), and their float32 values. With
    ``source`` (node name -> node) the codes are those of ``src``'s lattice within its bounds,
    else every code within them."""
    codes, _, _ = reachable(src, source)
    return codes, src.type.from_codes(codes).astype(np.float32)  # exact: |codes| < 2**24


def _lattice_points(src, source):
    """Per channel (first reachable code, last, the step between them (at least 1), base,
    lattice step) of ``src``'s lattice within its bounds (every code without ``source``)."""
    lo = np.broadcast_to(src.type.codes(src.lo), (src.shape[-1],)).astype(np.int64)
    hi = np.broadcast_to(src.type.codes(src.hi), (src.shape[-1],)).astype(np.int64)
    base, step = (np.zeros_like(lo), np.ones_like(lo)) if source is None else lattice(src, source)
    first, last = on_lattice(lo, hi, base, step)
    lost = first > last  # bounds without a lattice point (never for sound bounds): every code
    base, step = np.where(lost, 0, base), np.where(lost, 1, step)
    first, last = np.where(lost, lo, first), np.where(lost, hi, last)
    return first, last, np.where(step > 0, step, 1).astype(np.int64), base, step


def reachable(src, source):
    """(codes as in :func:`grid`, base, step) of the lattice used."""
    first, last, s, base, step = _lattice_points(src, source)
    span = int(((last - first) // s).max()) + 1
    return np.minimum(first[None, :] + np.arange(span)[:, None] * s[None, :], last[None, :]), base, step


def _too_wide(step: Step, src, span: int, why: str) -> FreezeError:
    return FreezeError(
        f"step {step.name!r}: the accumulator of {src.name!r} ({src.type}) spans {span} values per channel, "
        f"too many to derive thresholds by enumeration{why}; use narrower inputs or weights before this quantizer"
    )


def _span(src) -> int:
    """The most accumulator codes of one channel within its bounds."""
    return int((src.type.codes(src.hi) - src.type.codes(src.lo)).max()) + 1


def enumerable(src) -> bool:
    """Every accumulator value of every channel can be enumerated (at most MAX_ENUMERATION)."""
    return _span(src) * src.shape[-1] <= MAX_ENUMERATION


def check_exact_codes(step: Step, src, freezing=None) -> None:
    """Refuse an accumulator beyond float32's exact integers (Keras's own values would round),
    unless Keras sums it exactly in float64 and rounds it once to float32 (``float64_sums`` of
    ``freezing``): the replay then rounds each exact value as Keras does, up to float64's exact
    integers (beyond them the float32 exactness check warns)."""
    lo, hi = src.type.codes(src.lo), src.type.codes(src.hi)
    rounded = freezing is not None and src.name in freezing.float64_sums
    if int(np.abs(np.concatenate([np.ravel(lo), np.ravel(hi)])).max()) >= 1 << (53 if rounded else 24):
        raise _too_wide(step, src, _span(src), " (beyond float32's exact integers)")


def check_enumerable(step: Step, src, freezing=None) -> None:
    """Refuse an accumulator too wide to enumerate (or beyond float32's exact integers)."""
    check_exact_codes(step, src, freezing)
    if not enumerable(src):
        raise _too_wide(step, src, _span(src), "")


def bisectable(step: Step) -> bool:
    """The step's output is provably monotone in the accumulator, rounding included: every float
    op is (:attr:`FloatOp.monotone`) and the quantizer is piecewise linear (no transcendental
    curve or logarithm: those are polynomial approximations in float32)."""
    from ...training import quantizers as qz

    linear = (qz.SteSign, qz.ApproxSign, qz.SwishSign, qz.SteHeaviside, qz.SteTern, qz.DoReFa, qz.QuantizedBits)
    linear += (qz.QuantizedRelu, qz.Binary, qz.Ternary, qz.BinaryTanh)
    if not all(op.monotone for op in step.float_ops) or type(step.quantizer) not in linear:
        return False
    # an overflow that wraps or drops to zero (WRAP, SAT_ZERO) is not monotone (fuzz seed 52057)
    return forms.output_type(step.quantizer).overflow in ("SAT", "SAT_SYM")


_FORCED = [False]


@contextlib.contextmanager
def bisecting():
    """Within the block every provably monotone step is bisected, also where enumeration would
    do: the fuzzer checks the bisection path end to end (Keras = emulator = C-simulation) so."""
    _FORCED[0] = True
    try:
        yield
    finally:
        _FORCED[0] = False


def bisects(step: Step, src) -> bool:
    """The step's thresholds are found by bisection: too wide to enumerate (or within
    :func:`bisecting`) and provably monotone."""
    return bisectable(step) and (_FORCED[0] or not enumerable(src))


def _output_codes(step: Step, values, freezing, out_type):
    out = replay.evaluate(step, values, freezing.jit, rank=len(freezing.source(step).shape))
    if not out_type.contains(out):
        raise FreezeError(
            f"{step.name!r} ({', '.join(step.sources)}): quantizer {step.quantizer!r} produced values off its "
            f"declared grid {out_type}, which thresholds cannot reproduce; use a quantizer whose outputs lie on one "
            "fixed-point grid"
        )
    return out_type.codes(out)


def node(step: Step, freezing):
    """The threshold node of a requant step, per channel (the last axis); the float ops run on
    values of the source's rank. Every reachable accumulator value is enumerated when there are
    at most MAX_ENUMERATION of them; beyond, the thresholds of a provably monotone step are found
    by bisection (:func:`_bisect`), exactly the same."""
    src = freezing.source(step)
    out_type = forms.output_type(step.quantizer)
    check_exact_codes(step, src, freezing)
    if bisects(step, src):
        return _bisect(step, src, freezing, out_type)
    if not enumerable(src):
        raise _too_wide(step, src, _span(src), " (and its float ops or quantizer are not provably monotone for bisection)")
    codes, base, lattice_step = reachable(src, freezing.node)
    values = src.type.from_codes(codes).astype(np.float32)  # exact below 2**24, else rounded as Keras does
    out_codes = _output_codes(step, values, freezing, out_type)
    freezing.replayed[step.name] = (values, out_codes)
    changes = np.diff(out_codes, axis=0) != 0  # (span-1, C): the level changes entering row r+1
    per_channel = []
    for c in range(src.shape[-1]):
        rows = np.nonzero(changes[:, c])[0] + 1
        per_channel.append((codes[rows, c], out_codes[0, c], out_codes[rows, c]))
    return _threshold_node(step, src, out_type, per_channel, codes[0], (base, lattice_step))


def _threshold_node(step: Step, src, out_type, per_channel, first_codes, lattice_):
    """The threshold node from per channel (threshold codes, the level below the first, the
    level from each threshold on), padded to one count per channel."""
    channels = len(per_channel)
    k = max(max((len(t) for t, _, _ in per_channel), default=0), 1)
    thresholds = np.empty((channels, k), dtype=np.int64)
    levels = np.empty((channels, k + 1), dtype=np.int64)
    for c, (t, first_level, after) in enumerate(per_channel):
        lv = np.concatenate([[first_level], after]).astype(np.int64)
        if len(t) == 0:  # constant output: one threshold that changes nothing
            t = np.asarray(first_codes[c : c + 1])
            lv = np.array([lv[0], lv[0]])
        pad = k - len(t)
        thresholds[c] = np.concatenate([t, np.repeat(t[-1], pad)])
        levels[c] = np.concatenate([lv, np.repeat(lv[-1], pad)])
    return threshold_node(step.name, src, thresholds, levels, out_type, source=",".join(step.sources), lattice=lattice_)


# probes per channel and round of the bisection (a replayed tensor's rows come in multiples of
# replay.VECTOR_ROWS anyway), and the reachable values on each side of a threshold the caveat
# checks replay (those whose quantized output TensorFlow's other arithmetic forms could move)
PROBES = 63
CAVEAT_WINDOW = 32


def _bisect(step: Step, src, freezing, out_type):
    """The threshold node of a monotone step, found by a k-ary search per channel over the
    reachable lattice indices: each round probes the open intervals whose two ends give
    different outputs (monotone: an interval whose ends agree holds no change), about
    PROBES / (intervals of the channel) points each, until every change is pinned between
    neighbours. O(levels x log(range)) values replayed in Keras instead of every one. The
    caveat checks replay CAVEAT_WINDOW values on each side of every threshold."""
    first, last, s, base, lstep = _lattice_points(src, freezing.node)
    n = (last - first) // s + 1  # reachable values per channel
    channels = len(n)

    def outputs(idx: np.ndarray, ch: np.ndarray) -> np.ndarray:
        """The output codes at lattice indices ``idx`` of channels ``ch`` (one Keras replay)."""
        order = np.argsort(ch, kind="stable")
        counts = np.bincount(ch, minlength=channels)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty(len(ch), dtype=np.int64)
        rank[order] = np.arange(len(ch)) - start[ch[order]]
        grid_idx = np.zeros((max(int(counts.max()), 1), channels), dtype=np.int64)
        grid_idx[rank, ch] = idx
        codes = np.minimum(first[None, :] + grid_idx * s[None, :], last[None, :])
        got = _output_codes(step, src.type.from_codes(codes).astype(np.float32), freezing, out_type)
        return got[rank, ch]

    every = np.arange(channels)
    ends = outputs(np.concatenate([np.zeros(channels, dtype=np.int64), n - 1]), np.concatenate([every, every]))
    first_level, last_level = ends[:channels], ends[channels:]
    # open intervals (channel, a, b, out(a), out(b)) with out(a) != out(b)
    open_ = np.nonzero(first_level != last_level)[0]
    ch, a, b = open_, np.zeros(len(open_), dtype=np.int64), (n - 1)[open_]
    oa, ob = first_level[open_], last_level[open_]
    found_ch, found_idx, found_level = [], [], []
    while len(ch):
        pinned = b - a == 1
        found_ch.append(ch[pinned])
        found_idx.append(b[pinned])
        found_level.append(ob[pinned])
        ch, a, b, oa, ob = ch[~pinned], a[~pinned], b[~pinned], oa[~pinned], ob[~pinned]
        if not len(ch):
            break
        per = np.maximum(PROBES // np.bincount(ch, minlength=channels)[ch], 1)
        per = np.minimum(per, b - a - 1)  # at most every interior point
        # probe j of interval i at a + (b - a) * (j + 1) // (per + 1): distinct interior points
        interval = np.repeat(np.arange(len(ch)), per)
        j = np.arange(len(interval)) - np.repeat(np.cumsum(per) - per, per)
        probe = a[interval] + ((b - a)[interval] * (j + 1)) // (per[interval] + 1)
        got = outputs(probe, ch[interval])
        # each interval becomes the pieces between its ends and probes whose ends differ
        points = np.concatenate([a, probe, b])
        levels_at_points = np.concatenate([oa, got, ob])
        owner = np.concatenate([np.arange(len(ch)), interval, np.arange(len(ch))])
        order = np.lexsort((points, owner))
        points, levels_at_points, owner = points[order], levels_at_points[order], owner[order]
        same = owner[1:] == owner[:-1]
        differ = same & (levels_at_points[1:] != levels_at_points[:-1])
        ch, a, b = ch[owner[:-1][differ]], points[:-1][differ], points[1:][differ]
        oa, ob = levels_at_points[:-1][differ], levels_at_points[1:][differ]
    found_ch = np.concatenate(found_ch) if found_ch else np.zeros(0, dtype=np.int64)
    found_idx = np.concatenate(found_idx) if found_idx else np.zeros(0, dtype=np.int64)
    found_level = np.concatenate(found_level) if found_level else np.zeros(0, dtype=np.int64)
    order = np.lexsort((found_idx, found_ch))
    found_ch, found_idx, found_level = found_ch[order], found_idx[order], found_level[order]
    per_channel = []
    for c in range(channels):
        mine = found_ch == c
        per_channel.append((first[c] + found_idx[mine] * s[c], first_level[c], found_level[mine]))
    _check_monotone(step, src, per_channel, first_level)
    _caveat_window(step, src, freezing, out_type, first, s, n, found_ch, found_idx)
    return _threshold_node(step, src, out_type, per_channel, first, (base, lstep))


def _check_monotone(step: Step, src, per_channel, first_level) -> None:
    """The levels found run one way per channel (a monotone step's do; anything else is a
    defect of the proof of monotonicity, refused rather than deployed)."""
    for c, (_, below, after) in enumerate(per_channel):
        lv = np.concatenate([[below], after])
        d = np.diff(lv)
        if not (np.all(d > 0) or np.all(d < 0)):
            raise FreezeError(
                f"step {step.name!r}: the output of channel {c} of {src.name!r} is not monotone in the accumulator, so "
                "its thresholds cannot be found by bisection; use narrower inputs or weights before this quantizer"
            )


def _caveat_window(step: Step, src, freezing, out_type, first, s, n, found_ch, found_idx) -> None:
    """Replay the CAVEAT_WINDOW reachable values on each side of every threshold (the values the
    caveat checks look at: only those near a threshold can change level when TensorFlow computes
    a float op another way) and record them as the step's replayed values."""
    offsets = np.arange(-CAVEAT_WINDOW, CAVEAT_WINDOW)
    if len(found_ch):
        ch = np.repeat(found_ch, len(offsets))
        idx = np.clip(np.repeat(found_idx, len(offsets)) + np.tile(offsets, len(found_idx)), 0, (n - 1)[ch])
        pairs = np.unique(np.stack([ch, idx], axis=1), axis=0)
        ch, idx = pairs[:, 0], pairs[:, 1]
    else:
        ch, idx = np.arange(len(n)), np.zeros(len(n), dtype=np.int64)
    counts = np.bincount(ch, minlength=len(n))
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(len(ch)) - start[ch]
    rows = max(int(counts.max()), 1)
    grid_idx = np.zeros((rows, len(n)), dtype=np.int64)
    # a channel with fewer window values repeats its last one (as enumeration repeats a short
    # channel's top code)
    last_idx = np.zeros(len(n), dtype=np.int64)
    last_idx[ch] = idx  # ch is sorted, so the last write per channel is its largest index
    grid_idx[:] = last_idx[None, :]
    grid_idx[rank, ch] = idx
    codes = np.minimum(first[None, :] + grid_idx * s[None, :], (first + (n - 1) * s)[None, :])
    values = src.type.from_codes(codes).astype(np.float32)
    freezing.replayed[step.name] = (values, _output_codes(step, values, freezing, out_type))


def levels_at(node, codes) -> np.ndarray:
    """The threshold node's output codes for accumulator ``codes`` (rows x channels)."""
    t, lv = node.params["thresholds"], node.params["levels"]
    return np.stack([lv[c, (codes[:, c, None] >= t[c][None, :]).sum(axis=1)] for c in range(codes.shape[1])], axis=1)
