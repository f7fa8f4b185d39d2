"""``threshold``: requantization of an accumulator into a few levels, per channel ``c``:
``y = levels[c, n]`` where ``n`` counts the ``thresholds[c, k] <= x``. Thresholds are codes on the
input's type (ascending per channel), levels codes on ``type``. One op serves every
requantization: sign (one threshold, levels -1 and +1), ternary (two), k-bit (up to 2**k - 1).

Optionally the node records the lattice of its reachable inputs (``edgebnn.graph.lattice``):
per channel every input is ``base + k * step`` and so is every threshold, so an input and a
threshold share their low :func:`compare_shift` bits and a compare may ignore them."""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType
from ..node import GraphError, Node
from ._lattice import gcd, reduced
from ._spec import OpSpec
from ._weighted import compact_dtype


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """Thresholds (C, K) ascending on the input type, levels (C, K+1) on the node's type, shape kept."""
    src = inputs[0]
    t, lv = node.params.get("thresholds"), node.params.get("levels")
    c = node.shape[-1]
    if t is None or lv is None or t.ndim != 2 or t.shape[0] != c or lv.shape != (c, t.shape[1] + 1):
        raise GraphError(f"{where}: thresholds must be (C, K) and levels (C, K+1) with C={c}")
    if src.shape != node.shape:
        raise GraphError(f"{where}: output shape must equal its input's shape {src.shape}")
    if lv.min() < node.type.min_code or lv.max() > node.type.max_code:
        raise GraphError(f"{where}: levels do not fit its type {node.type}")
    if np.any(np.diff(t, axis=1) < 0):
        raise GraphError(f"{where}: thresholds must ascend per channel")
    if t.size and (t.min() < src.type.min_code or t.max() > src.type.max_code):
        raise GraphError(f"{where}: thresholds do not fit the input type {src.type}")
    if ("base" in node.params) != ("step" in node.params):
        raise GraphError(f"{where}: a lattice needs both base and step")
    if "step" in node.params:
        base, step = node.params["base"], node.params["step"]
        if base.shape != (c,) or step.shape != (c,) or step.min(initial=0) < 0:
            raise GraphError(f"{where}: lattice base and step must be ({c},) with step >= 0")
        on = step == 0
        on = on | (np.mod(t - base[:, None], np.where(step > 0, step, 1)[:, None]) == 0).all(axis=1)
        if not on.all():
            raise GraphError(f"{where}: thresholds must lie on the lattice of its inputs (base + k * step)")


# from this many thresholds per channel on, a channel's count is a binary search (np.searchsorted)
# rather than a compare per threshold, unless its thresholds are evenly spaced (then a division)
SEARCH_MIN = 24


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """Per channel, the level indexed by the number of thresholds at or below each code, counted
    by :func:`_counts` (a division where every channel's thresholds are evenly spaced, a binary
    search per channel for many uneven ones, else a compare per threshold), then the level as
    ``levels[c, 0] + n * step[c]`` where each channel's levels are evenly spaced (sign, ternary,
    k-bit) or one flat gather otherwise. Codes come out in the compact dtype of the node's type."""
    x = codes[0]
    t = node.params["thresholds"]
    c, k = t.shape
    if x.dtype == object:  # codes wider than 64 bits: Python ints
        flat = x.reshape(-1, c)
        counts = sum((flat >= t[:, j]).astype(np.int64) for j in range(k)) if k else np.zeros(flat.shape, np.int64)
        levels = node.params["levels"].astype(np.int64)
        return np.take_along_axis(levels.T, counts, axis=0).reshape(x.shape) if flat.shape[0] else counts.reshape(x.shape)
    out = compact_dtype(node.type)
    levels = node.params["levels"].astype(out)
    if k == 0:
        return np.broadcast_to(levels[:, 0], x.shape).copy()
    wide = node.params["levels"].astype(np.int64)
    step = wide[:, 1] - wide[:, 0]
    even_levels = np.array_equal(wide, wide[:, :1] + step[:, None] * np.arange(k + 1))
    counts = _counts(x, t, node.type if even_levels and k < 128 else None)
    if not even_levels:
        return np.take(levels.reshape(-1), counts + np.arange(c, dtype=np.int64) * (k + 1))
    # level0 + n * step in the codes' own dtype, in place: n * step may wrap, but the sum is a
    # level of the type, so it wraps back exactly
    if counts.dtype == out:
        y = counts
    elif out == np.int8 and counts.dtype == np.uint8 and k < 128:
        y = counts.view(out)
    else:
        y = counts.astype(out)
    if (step == step[0]).all() and (wide[:, 0] == wide[0, 0]).all():  # one form for every channel: scalar passes
        if step[0] != 1:
            y *= step[:1].astype(out)[0]  # astype wraps a step wider than the dtype (200 in int8)
        if wide[0, 0] != 0:
            y += levels[0, 0]
    else:
        y *= step.astype(out)
        y += levels[:, 0]
    return y


def _counts(x: np.ndarray, t: np.ndarray, into) -> np.ndarray:
    """How many of each channel's thresholds ``t`` (C, K), K >= 1, lie at or below each integer
    code of ``x`` (..., C): uint8 or a signed integer dtype, or the compact dtype of the FixedType
    ``into`` when given (the counts, at most K < 128, are written into it directly where a pass
    can)."""
    c, k = t.shape
    info = np.iinfo(x.dtype)
    if t.min() >= info.min and t.max() <= info.max:
        t = t.astype(x.dtype)  # compare in the codes' own width
    if k == 1:
        return np.greater_equal(x, t[:, 0]).view(np.uint8)
    gaps = t[:, 1] - t[:, 0]
    if (gaps > 0).all() and np.array_equal(t, t[:, :1] + gaps[:, None] * np.arange(k)):
        # evenly spaced: n = clip(floor((x - t0 + gap) / gap), 0, K), in a dtype holding every difference
        offset = t[:, 0].astype(np.int64) - gaps
        span = (int(info.min) - int(offset.max()), int(info.max) - int(offset.min()))
        dt = next(
            (np.dtype(d) for d in (np.int16, np.int32, np.int64) if np.iinfo(d).min <= span[0] and span[1] <= np.iinfo(d).max),
            None,
        )
        if dt is not None:
            if dt.itemsize < x.dtype.itemsize:
                dt = x.dtype
            d = np.subtract(x, offset.astype(dt), dtype=dt)
            g = int(gaps[0])
            if not (gaps == g).all():
                np.floor_divide(d, gaps.astype(dt), out=d)
            elif g > 1 and g & (g - 1) == 0:
                np.right_shift(d, g.bit_length() - 1, out=d)  # an arithmetic shift: the floor
            elif g > 1:
                np.floor_divide(d, dt.type(g), out=d)
            if into is not None:
                return np.clip(d, 0, k, out=np.empty(d.shape, dtype=compact_dtype(into)), casting="unsafe")
            return np.clip(d, 0, k, out=d)
    if k >= SEARCH_MIN:
        flat = x.reshape(-1, c)
        counts = np.empty(flat.shape, dtype=np.int64)
        for j in range(c):
            counts[:, j] = np.searchsorted(t[j], flat[:, j], side="right")
        return counts.reshape(x.shape)
    counts = np.zeros(x.shape, dtype=np.uint8 if k < 256 else np.int64)
    reached = np.empty(x.shape, dtype=bool)
    rows = np.ascontiguousarray(t.T)  # threshold j of every channel, contiguous: a fast broadcast
    for j in range(k):
        np.greater_equal(x, rows[j], out=reached)
        counts += reached
    return counts


def describe(node: Node) -> str:
    step = node.params.get("step")
    on = "" if step is None or (step <= 1).all() else f" on a lattice of step {int(step.max())}"
    return f" {node.params['thresholds'].shape[1]} threshold(s)/channel{on}"


def compare_shift(node: Node, width: int) -> int:
    """How many low bits of an input of ``width`` bits every reachable input of a channel shares
    with that channel's thresholds (their lattice step's common power of two; 0 without a
    lattice), at most ``width - 2`` so that a sign and one more bit remain to compare."""
    step = node.params.get("step")
    if step is None or not (step > 0).any():
        return 0
    tz = min((int(s) & -int(s)).bit_length() - 1 for s in step if s > 0)
    return max(0, min(tz, width - 2))


def threshold_node(name: str, src: Node, thresholds, levels, out_type: FixedType, source: str = "", lattice=None) -> Node:
    """A threshold node on ``src``: ``thresholds`` (C, K) codes of ``src.type``, ``levels`` (C, K+1)
    codes of ``out_type``; its bounds are each channel's extreme levels. ``lattice`` (base,
    step), when given, is the lattice of ``src``'s reachable codes (see the module docstring)."""
    thresholds = np.asarray(thresholds, dtype=np.int64)
    levels = np.asarray(levels, dtype=np.int64)
    vals = out_type.from_codes(levels)
    params = {"thresholds": thresholds, "levels": levels, "lo": vals.min(axis=1), "hi": vals.max(axis=1)}
    if lattice is not None:
        params["base"], params["step"] = (np.asarray(v, dtype=np.int64).reshape(-1) for v in lattice)
    return Node(name, "threshold", [src.name], src.shape, out_type, params, {}, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`threshold_node` builds it from its thresholds and levels (its bounds)."""
    p = node.params
    lattice = (p["base"], p["step"]) if "base" in p else None
    return threshold_node(node.name, inputs[0], p["thresholds"], p["levels"], node.type, lattice=lattice)


def lattice(node: Node, source, lattice_of) -> tuple[np.ndarray, np.ndarray]:
    """Its levels per channel (step the gcd of their differences)."""
    lv = np.asarray(node.params["levels"], dtype=np.int64)
    step = np.array([gcd(np.diff(row)) for row in lv], dtype=np.int64)
    return reduced(lv[:, 0], step)


SPEC = OpSpec(
    op="threshold",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    describe=describe,
    params={
        "thresholds": "int codes (C, K) on the input's type, ascending per channel",
        "levels": "int codes (C, K+1) on the node's type: the output for 0..K thresholds reached",
    },
    optional_params={
        "base": "int (C,): with step, every reachable input code of channel c is base[c] + k * step[c]",
        "step": "int (C,) >= 0: the lattice step of the reachable inputs (0: a constant channel); thresholds lie on it",
    },
    lattice=lattice,
)
