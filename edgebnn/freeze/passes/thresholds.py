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


def reachable(src, source):
    """(codes as in :func:`grid`, base, step) of the lattice used."""
    lo = np.broadcast_to(src.type.codes(src.lo), (src.shape[-1],))
    hi = np.broadcast_to(src.type.codes(src.hi), (src.shape[-1],))
    base, step = (np.zeros_like(lo), np.ones_like(lo)) if source is None else lattice(src, source)
    first, last = on_lattice(lo, hi, base, step)
    lost = first > last  # bounds without a lattice point (never for sound bounds): every code
    base, step = np.where(lost, 0, base), np.where(lost, 1, step)
    first, last = np.where(lost, lo, first), np.where(lost, hi, last)
    s = np.where(step > 0, step, 1)
    span = int(((last - first) // s).max()) + 1
    return np.minimum(first[None, :] + np.arange(span)[:, None] * s[None, :], last[None, :]), base, step


def check_enumerable(step: Step, src) -> None:
    """Refuse an accumulator too wide to enumerate (or beyond float32's exact integers)."""
    lo = src.type.codes(src.lo)
    hi = src.type.codes(src.hi)
    span = int((hi - lo).max()) + 1
    if span * src.shape[-1] > MAX_ENUMERATION or int(np.abs(np.concatenate([lo, hi])).max()) >= 1 << 24:
        raise FreezeError(
            f"step {step.name!r}: the accumulator of {src.name!r} ({src.type}) spans {span} values per channel, "
            f"too many to derive thresholds by enumeration; use narrower inputs or weights before this quantizer"
        )


def node(step: Step, freezing):
    """The threshold node of a requant step, per channel (the last axis); the float ops run on
    values of the source's rank."""
    src = freezing.source(step)
    out_type = forms.output_type(step.quantizer)
    check_enumerable(step, src)
    channels = src.shape[-1]
    codes, base, lattice_step = reachable(src, freezing.node)
    values = src.type.from_codes(codes).astype(np.float32)  # exact: |codes| < 2**24
    out = replay.evaluate(step, values, freezing.jit, rank=len(src.shape))
    if not out_type.contains(out):
        raise FreezeError(
            f"{step.name!r} ({', '.join(step.sources)}): quantizer {step.quantizer!r} produced values off its "
            f"declared grid {out_type}, which thresholds cannot reproduce; use a quantizer whose outputs lie on one "
            "fixed-point grid"
        )
    out_codes = out_type.codes(out)
    freezing.replayed[step.name] = (values, out_codes)
    changes = np.diff(out_codes, axis=0) != 0  # (span-1, C): the level changes entering row r+1
    k = max(int(changes.sum(axis=0).max()), 1)
    thresholds = np.empty((channels, k), dtype=np.int64)
    levels = np.empty((channels, k + 1), dtype=np.int64)
    for c in range(channels):
        rows = np.nonzero(changes[:, c])[0] + 1
        t = codes[rows, c]
        lv = np.concatenate([[out_codes[0, c]], out_codes[rows, c]])
        if len(t) == 0:  # constant output: one threshold that changes nothing
            t = codes[:1, c]
            lv = np.array([lv[0], lv[0]])
        pad = k - len(t)
        thresholds[c] = np.concatenate([t, np.repeat(t[-1], pad)])
        levels[c] = np.concatenate([lv, np.repeat(lv[-1], pad)])
    return threshold_node(
        step.name, src, thresholds, levels, out_type, source=",".join(step.sources), lattice=(base, lattice_step)
    )


def levels_at(node, codes) -> np.ndarray:
    """The threshold node's output codes for accumulator ``codes`` (rows x channels)."""
    t, lv = node.params["thresholds"], node.params["levels"]
    return np.stack([lv[c, (codes[:, c, None] >= t[c][None, :]).sum(axis=1)] for c in range(codes.shape[1])], axis=1)
