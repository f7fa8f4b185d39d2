"""Cost of a ``threshold`` node: per channel ``K`` ascending thresholds on the input type.

A threshold at or below the channel's lower bound, or above its upper bound, is a constant and
costs nothing; equal thresholds share one comparator. Each live comparator is
``lut_per_compare_bit * Wi`` LUTs (``Wi`` the compare width: the input width less the low bits
the node's lattice fixes, ``compare_shift``; a carry chain against a constant);
with ``K >= 2`` live ones in a channel, every output bit (``Wo`` of them) is a function of the
``K`` comparator bits, ``ceil(K / level_mux_inputs_per_lut)`` LUTs. ``FF = channels * Wo``.
Latency: the compare (plus one adder level's time for that level logic when some channel has
``K >= 2``) in cycles, at least 1; II 1. The reuse factor does not apply.

From ``SEARCH_FROM`` thresholds per channel on (``ops.threshold``), the layer searches instead:
``S = bit_length(K)`` compares per element in sequence, step ``j`` against one of ``2**j``
thresholds the bits found so far select (a ROM of ``Wi``-bit constants:
``Wi * ceil(2**j / 2**level_mux_inputs_per_lut)`` LUTs, none for step 0), each compare
``lut_per_compare_bit * Wi`` LUTs against that variable; the level is a function of the ``S``
found bits, ``Wo * ceil(2**S / 2**level_mux_inputs_per_lut)`` LUTs. Latency: ``S`` compares
and selects in sequence.

After a convolution it works per element: hls4ml's io_parallel activations are fully unrolled
over ``H*W*C``, so every figure above is times the ``H*W`` positions. io_stream activations
process one pixel per cycle: the units are built for ``C`` elements once, take ``H*W - 1``
more cycles, and the II is ``H*W``.
"""

from __future__ import annotations

import math

import numpy as np

from edgebnn.graph import Node
from edgebnn.graph.ops.threshold import compare_shift

from ..ops.threshold import search_steps
from .blocks import _positions
from .context import _Context
from .row import LayerEstimate


def cost(
    node: Node, src: Node, rf: int, ctx: _Context, widths, warnings: list[str], live: np.ndarray | None = None
) -> LayerEstimate:
    """The row of a threshold node: live comparators and the level logic (the reuse factor
    and the live outputs do not apply)."""
    c = ctx.c
    t = np.asarray(node.params["thresholds"], dtype=np.int64)
    lo = src.type.codes(np.broadcast_to(src.lo, (t.shape[0],)))
    hi = src.type.codes(np.broadcast_to(src.hi, (t.shape[0],)))
    live = _distinct_inside(t, lo, hi)
    wi, wo = widths[src.name]["result"].width, widths[node.name]["result"].width
    wi -= compare_shift(node, wi)  # the low bits every input shares with its thresholds
    pixels = _positions(node)
    stream = ctx.io_type == "io_stream" and pixels > 1  # one pixel per cycle through C units
    p = 1 if stream else pixels
    steps = search_steps(int(t.shape[1]))
    ff = p * t.shape[0] * wo
    if steps:  # the binary search: S compares per element against selected thresholds
        rom = 2**c.level_mux_inputs_per_lut  # entries of one LUT's function
        comparators = p * t.shape[0] * steps
        lut_cmp = math.ceil(c.lut_per_compare_bit * comparators * wi)
        select = sum(wi * math.ceil(2**j / rom) for j in range(1, steps)) + wo * math.ceil(2**steps / rom)
        lut_mux = p * t.shape[0] * select
        ns = steps * (ctx.ns("compare") + ctx.ns("add"))
    else:
        comparators = p * sum(live)
        lut_cmp = math.ceil(c.lut_per_compare_bit * comparators * wi)
        lut_mux = p * sum(wo * math.ceil(k / c.level_mux_inputs_per_lut) for k in live if k >= 2)
        ns = ctx.ns("compare") + (ctx.ns("add") if any(k >= 2 for k in live) else 0.0)
    latency = max(1, ctx.cycles(ns)) + (pixels - 1 if stream else 0)
    detail = {
        "channels": t.shape[0],
        "thresholds_per_channel": t.shape[1],
        "live_comparators": comparators,
        "search_steps": steps,
        "input_bits": wi,
        "output_bits": wo,
    }
    return LayerEstimate(node.name, "threshold", lut_cmp + lut_mux, ff, 0, 0, 0, latency, pixels if stream else 1, detail)


def _distinct_inside(t: np.ndarray, lo, hi) -> list[int]:
    """Per channel (row of ``t``), the distinct thresholds ``x`` with ``lo < x <= hi``: in each
    row sorted, the values inside that differ from the one before (all channels at once)."""
    s = np.sort(t, axis=1)
    inside = (s > np.asarray(lo)[:, None]) & (s <= np.asarray(hi)[:, None])
    first = np.ones(s.shape, dtype=bool)
    first[:, 1:] = s[:, 1:] != s[:, :-1]
    return [int(k) for k in (inside & first).sum(axis=1)]
