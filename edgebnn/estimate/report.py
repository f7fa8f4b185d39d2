"""The estimator's report: :class:`Estimate` (rows, totals, utilization, fits, latency, II,
as a text table or plain JSON) and its rows, :class:`LayerEstimate`.

``fits`` is true when every total is at most ``utilization_limit`` of the board (a device with
0 of a resource fits only designs that use none) and the DSPs the design asks for
(``dsp_needed``, before Vivado caps them at the device's count) are within it too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from edgebnn.backends.hls4ml.cost.row import LayerEstimate, _jsonable
from edgebnn.boards import RESOURCES, Board

from .intervals import family_of, interval

__all__ = ["Estimate", "LayerEstimate"]


@dataclasses.dataclass(frozen=True)
class Estimate:
    """One graph on one board: the build's options, a row per node, and the warnings."""

    graph: str
    board: Board
    strategy: str
    reuse_factor: Any
    io_type: str
    clock_period_ns: float
    utilization_limit: float
    rows: tuple[LayerEstimate, ...]
    warnings: tuple[str, ...] = ()
    dsp_needed: int = 0  # DSPs the design asks for before Vivado caps them at the device's count
    hls_tool: str = "vitis_hls"
    # in a graph with branches, the rows on the slowest path from input to output (the latency
    # adds those); empty for a chain, where every row is on it
    latency_path: tuple[str, ...] = ()

    @property
    def totals(self) -> dict[str, int]:
        return {key: sum(getattr(r, key) for r in self.rows) for key in RESOURCES}

    @property
    def available(self) -> dict[str, int]:
        return self.board.resources()

    @property
    def utilization(self) -> dict[str, float]:
        """Percent of the board per resource (``inf`` when the board has none and some is used)."""
        out = {}
        for key, used in self.totals.items():
            have = self.available[key]
            out[key] = 100.0 * used / have if have else (0.0 if used == 0 else math.inf)
        return out

    @property
    def fits(self) -> bool:
        have = self.available
        if self.dsp_needed > have["dsp"] * self.utilization_limit:
            return False
        return all(
            used == 0 or (have[key] > 0 and used / have[key] <= self.utilization_limit) for key, used in self.totals.items()
        )

    @property
    def family(self) -> str:
        """The design family whose validation residuals give the intervals (``"dense"``, ``"conv"``)."""
        return family_of(r.op for r in self.rows)

    @property
    def intervals(self) -> dict[str, tuple[float, float]]:
        """Per figure (``lut``, ``ff``, ``dsp``, ``bram18``, ``latency``) the interval in which
        8 in 10 published designs of this family lay (:mod:`.intervals`)."""
        values = {**{k: v for k, v in self.totals.items() if k != "uram"}, "latency": self.latency_cycles}
        return {k: interval(v, self.family, k) for k, v in values.items()}

    def fits_with_margin(self, margin: float) -> bool:
        """Whether the design fits when every resource is taken at the top of its interval
        times ``1 + margin`` (the DSPs at the top of the interval of ``dsp_needed``): a design
        whose interval crosses the budget does not."""
        have = self.available
        _, hi = interval(self.dsp_needed, self.family, "dsp")
        if hi * (1 + margin) > have["dsp"] * self.utilization_limit:
            return False
        for key, (_, hi) in self.intervals.items():
            if key == "latency":
                continue
            top = hi * (1 + margin)
            if top > 0 and (have[key] == 0 or top / have[key] > self.utilization_limit):
                return False
        return True

    @property
    def latency_cycles(self) -> int:
        """io_parallel: the sum of the rows (on the slowest path). io_stream: hls4ml's layers
        are DATAFLOW processes that start as soon as their first input arrives, so the
        slowest process (largest II) sets the pace: its latency plus, for every other row, the
        cycles it adds after its last input: ``latency - II`` (at least 1) for a row that
        streams its output as it goes, the whole latency for one that writes only at its end
        (dense(stream): ``detail["stream_writes_at_end"]``)."""
        on_path = set(self.latency_path)
        rows = [r for r in self.rows if not on_path or r.name in on_path]
        if self.io_type != "io_stream" or not rows:
            return sum(r.latency for r in rows)
        slowest = max(rows, key=lambda r: r.ii)
        tails = (
            r.latency if r.detail.get("stream_writes_at_end") else max(r.latency - r.ii, 1) for r in rows if r is not slowest
        )
        return slowest.latency + sum(tails)

    @property
    def ii(self) -> int:
        return max((r.ii for r in self.rows), default=1)

    @property
    def latency_ns(self) -> float:
        return self.latency_cycles * self.clock_period_ns

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON types (``inf`` utilization becomes ``None``)."""
        return {
            "graph": self.graph,
            "board": {**{f.name: getattr(self.board, f.name) for f in dataclasses.fields(self.board)}},
            "strategy": self.strategy,
            "reuse_factor": _jsonable(self.reuse_factor),
            "io_type": self.io_type,
            "clock_period_ns": self.clock_period_ns,
            "hls_tool": self.hls_tool,
            "utilization_limit": self.utilization_limit,
            "rows": [r.to_dict() for r in self.rows],
            "totals": self.totals,
            "available": self.available,
            "utilization_percent": {k: (None if math.isinf(v) else v) for k, v in self.utilization.items()},
            "fits": self.fits,
            "dsp_needed": self.dsp_needed,
            "latency_cycles": self.latency_cycles,
            "latency_ns": self.latency_ns,
            "ii": self.ii,
            "family": self.family,
            "intervals": {k: [lo, hi] for k, (lo, hi) in self.intervals.items()},
            "warnings": list(self.warnings),
            **({"latency_path": list(self.latency_path)} if self.latency_path else {}),
        }

    def table(self) -> str:
        """A readable text table: one row per node, totals, the board and % of the board."""
        head = ("node", "op", "LUT", "FF", "DSP", "BRAM18", "URAM", "latency", "II")
        body = [(r.name, r.op, *map(str, r.resources().values()), str(r.latency), str(r.ii)) for r in self.rows]
        tot = self.totals
        body.append(("total", "", *map(str, tot.values()), str(self.latency_cycles), str(self.ii)))
        body.append((self.board.name, "", *map(str, self.available.values()), "", ""))
        body.append(("% of board", "", *(_pct(v) for v in self.utilization.values()), "", ""))
        widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

        def line(cells):
            return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        rule = "-" * len(line(head))
        rf = self.reuse_factor if not isinstance(self.reuse_factor, Mapping) else "per node"
        lines = [
            f"estimate of graph '{self.graph}' on {self.board.name} ({self.board.part}): {self.strategy}, "
            f"reuse factor {rf}, {self.io_type}, clock {self.clock_period_ns:g} ns, {self.hls_tool}",
            line(head),
            rule,
            *(line(r) for r in body[:-3]),
            rule,
            *(line(r) for r in body[-3:]),
            f"fits under {100 * self.utilization_limit:g}% of every resource: {'yes' if self.fits else 'no'}; "
            f"latency {self.latency_cycles} cycle{'' if self.latency_cycles == 1 else 's'} = {self.latency_ns:g} ns, "
            f"II {self.ii} cycle{'' if self.ii == 1 else 's'}",
            "8 in 10 published "
            + self.family
            + " designs lay within: "
            + ", ".join(f"{_label(k)} {lo:,.0f}-{hi:,.0f}" for k, (lo, hi) in self.intervals.items()),
        ]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _label(key: str) -> str:
    return key if key == "latency" else key.upper()


def _pct(value: float) -> str:
    """A percentage for the table (``inf`` where the board has none of a used resource)."""
    return "inf" if math.isinf(value) else f"{value:.1f}%"
