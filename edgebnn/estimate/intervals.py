"""Calibrated uncertainty: the interval each estimate carries, from the validation residuals.

``bench/validate_estimates.py`` rebuilds published hls4ml designs, estimates them and compares
each figure with the published one: resources with post-synthesis utilization (designs with
only the HLS tool's own resource estimate give no resource residual: it is often 2 to 10 times
the post-synthesis LUT count), latency with the HLS report. For every design family
(``"dense"``: dense layers only; ``"conv"``: with a convolution) and figure it takes the 10th
and 90th percentile of the relative residual ``(published - estimate) / estimate`` and prints
them as :data:`INTERVALS` (``--intervals``); the table below is that output for
``bench/reference/hls4ml_synthesis_results.csv``. An estimate ``e`` then carries the interval
``[e * (1 + p10), e * (1 + p90)]``: on the designs seen so far, 8 in 10 published figures lay
inside it. A figure with fewer than ``MIN_ROWS`` residuals in its family takes the pooled
figure of all families (``"all"``).

These intervals say how far the model has been off on published designs, not how far it can
be: a design unlike any of them (another tool version, a much larger network) may fall outside.
"""

from __future__ import annotations

from collections.abc import Iterable

# the figures an interval is given for, as Estimate.totals / Estimate.latency_cycles name them
KEYS = ("lut", "ff", "dsp", "bram18", "latency")

# fewer residuals than this in a family: use the pooled interval ("all")
MIN_ROWS = 5

# (p10, p90) of (published - estimate) / estimate per family and figure, from
# `python bench/validate_estimates.py --intervals` on bench/reference/hls4ml_synthesis_results.csv
# (its rows not held back)
INTERVALS: dict[str, dict[str, tuple[float, float]]] = {
    "all": {
        "lut": (-0.179, 0.41),
        "ff": (-0.224, 0.515),
        "dsp": (-0.056, 0.558),
        "bram18": (-0.286, 0.623),
        "latency": (-0.187, 0.225),
    },
    "dense": {
        "lut": (-0.308, 0.461),
        "ff": (-0.495, 0.153),
        "dsp": (-0.025, 0.344),
        "bram18": (-0.2, 0.0),
        "latency": (-0.225, 0.25),
    },
    "conv": {
        "lut": (-0.099, 0.359),
        "ff": (-0.154, 0.862),
        "dsp": (-0.043, 0.529),
        "bram18": (-0.286, 0.643),
        "latency": (-0.019, 0.124),
    },
}

CONV_OPS = ("conv1d", "conv2d", "depthwise_conv2d")


def family_of(ops: Iterable[str]) -> str:
    """The family a design's intervals come from: ``"conv"`` when it has a convolution."""
    return "conv" if any(op in CONV_OPS for op in ops) else "dense"


def bounds(family: str, key: str, table=None) -> tuple[float, float]:
    """(p10, p90) of the relative residual for ``key`` in ``family`` (the pooled one where the
    family has none)."""
    table = INTERVALS if table is None else table
    return (table.get(family) or {}).get(key) or table["all"][key]


def interval(value: float, family: str, key: str, table=None) -> tuple[float, float]:
    """The interval of an estimated ``value`` (never below 0)."""
    lo, hi = bounds(family, key, table)
    return max(0.0, value * (1 + lo)), max(0.0, value * (1 + hi))
