"""One validated description of what a design is built for: the target.

A :class:`Target` holds every option that decides how a deployment graph becomes hardware:
the hls4ml backend, the I/O style, the strategy, the reuse factor (one for the model or one per
weighted node), the clock, the HLS tool whose scheduler sets the latency, and the FPGA part
(from a board profile or given). It is checked once, when it is made, and then used as it is
by ``export``, ``estimate``, ``fit``, the command line (whose choices are the tuples below) and
the run configuration (whose ``export`` section becomes a Target when the file is loaded,
before any training).

Letter case is free in the choices (``"resource"`` is ``"Resource"``); the Target keeps the
canonical spelling. Nothing here imports hls4ml, TensorFlow or Keras.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

from ..errors import EdgebnnError

BACKENDS = ("Vitis", "Vivado")
IO_TYPES = ("io_parallel", "io_stream")
STRATEGIES = ("Latency", "Resource")
# the HLS tool families whose scheduling the estimator models: Vitis HLS (2020.2 and later) and
# Vivado HLS (up to 2020.1); hls4ml's Vivado backend is built by Vivado HLS, its Vitis backend by Vitis HLS
HLS_TOOLS = ("vitis_hls", "vivado_hls")
_TOOL_OF_BACKEND = {"Vitis": "vitis_hls", "Vivado": "vivado_hls"}


class TargetError(EdgebnnError):
    """A target option (backend, io_type, strategy, reuse factor, clock, HLS tool, part) that
    edgebnn cannot build; the message names the option and the accepted values."""


def choice(what: str, value, choices) -> str:
    """``value`` spelled as in ``choices`` (any letter case), or a TargetError naming them."""
    if isinstance(value, str):
        for c in choices:
            if value.lower() == c.lower():
                return c
    raise TargetError(f"{what} {value!r} is not supported; use one of {', '.join(choices)}")


def hls_tool_family(tool) -> str:
    """``"vivado_hls"`` or ``"vitis_hls"`` from names like ``"Vivado HLS 2020.1"`` or ``"vitis"``."""
    if isinstance(tool, str):
        t = tool.lower().replace("_", " ").replace("-", " ")
        if "vivado" in t:
            return "vivado_hls"
        if "vitis" in t:
            return "vitis_hls"
    raise TargetError(
        f"unknown hls_tool {tool!r}; use 'vitis_hls' (Vitis HLS 2020.2 and later) or 'vivado_hls' (Vivado HLS up to 2020.1)"
    )


def check_reuse_factor(value, where: str = "") -> int:
    """A reuse factor: an integer >= 1 (``where`` says which node, for the message)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise TargetError(f"reuse factor {where}must be an integer >= 1, got {value!r}")
    return int(value)


def check_clock_period(value) -> float | int:
    """A clock period in ns: a positive finite number (an integral one stays an int)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise TargetError(f"clock_period must be a positive number of ns, got {value!r}")
    return int(value) if float(value).is_integer() else float(value)


@dataclasses.dataclass(frozen=True)
class Target:
    """What a graph is built for, validated when made (see the module docstring).

    Args:
        backend: hls4ml's ``"Vitis"`` or ``"Vivado"``.
        io_type: ``"io_parallel"`` (arrays) or ``"io_stream"`` (hls::stream of pixels).
        strategy: ``"Latency"`` or ``"Resource"``.
        reuse_factor: an integer >= 1 for every weighted node, or a mapping node name -> integer
            (weighted nodes not named get 1).
        clock_period_ns: the clock period as given; None takes the board's (:attr:`clock_ns`).
        hls_tool: the HLS tool family whose scheduler the estimate models; None takes the one
            that builds ``backend`` (:attr:`tool`: Vitis -> ``vitis_hls``, Vivado ->
            ``vivado_hls``). Names such as ``"Vivado HLS 2019.2"`` are accepted.
        part: the FPGA part as given; None takes the board's (:attr:`device_part`).
        board: a board profile (:class:`edgebnn.boards.Board`, a mapping with ``part`` and
            ``clock_period_ns``), a board's name or ``.yaml`` path (``"pynq-z2"``, read by
            :func:`edgebnn.boards.load_board`), or None.
    """

    backend: str = "Vitis"
    io_type: str = "io_parallel"
    strategy: str = "Latency"
    reuse_factor: Any = 1
    clock_period_ns: float | None = None
    hls_tool: str | None = None
    part: str | None = None
    board: Any = None

    def __post_init__(self):
        set_ = lambda key, value: object.__setattr__(self, key, value)
        if isinstance(self.board, str | os.PathLike):  # a board's name or profile path
            from ..boards import load_board

            set_("board", load_board(self.board))
        set_("backend", choice("backend", self.backend, BACKENDS))
        set_("io_type", choice("io_type", self.io_type, IO_TYPES))
        set_("strategy", choice("strategy", self.strategy, STRATEGIES))
        if isinstance(self.reuse_factor, Mapping):
            for name, value in self.reuse_factor.items():
                check_reuse_factor(value, f"of node {name!r} ")
            set_("reuse_factor", {str(k): int(v) for k, v in self.reuse_factor.items()})
        else:
            set_("reuse_factor", check_reuse_factor(self.reuse_factor))
        if self.clock_period_ns is not None:
            set_("clock_period_ns", check_clock_period(self.clock_period_ns))
        if self.hls_tool is not None:
            set_("hls_tool", hls_tool_family(self.hls_tool))
        if self.part is not None and (not isinstance(self.part, str) or not self.part.strip()):
            raise TargetError(f"FPGA part must be a non-empty string like 'xc7z020clg400-1', got {self.part!r}")
        # what the board must supply is checked now, not at first use
        self.clock_ns  # noqa: B018
        self.device_part  # noqa: B018

    @property
    def tool(self) -> str:
        """The HLS tool family the design is scheduled by: the one given, else the one that
        builds the backend (Vitis -> ``vitis_hls``, Vivado -> ``vivado_hls``)."""
        return _TOOL_OF_BACKEND[self.backend] if self.hls_tool is None else self.hls_tool

    @property
    def clock_ns(self) -> float | int | None:
        """The clock period the design is built for: the one given, else the board's, else None."""
        if self.clock_period_ns is not None or self.board is None:
            return self.clock_period_ns
        return check_clock_period(_board_value(self.board, "clock_period_ns"))

    @property
    def device_part(self) -> str | None:
        """The FPGA part: the one given, else the board's, else None (hls4ml's default)."""
        if self.part is not None or self.board is None:
            return self.part
        return _board_value(self.board, "part")

    def replace(self, **changes) -> Target:
        """A copy with ``changes``, validated again (a new board brings its part and clock
        where the target gives none)."""
        return dataclasses.replace(self, **changes)

    def reuse_factor_of(self, node: str) -> int:
        """The reuse factor of the weighted node ``node``."""
        if isinstance(self.reuse_factor, Mapping):
            return self.reuse_factor.get(node, 1)
        return self.reuse_factor

    def reuse_factors(self, graph) -> dict[str, int]:
        """The reuse factor of each weighted node (one with a weight matrix: dense, conv2d) of
        ``graph``; a per-node reuse factor that names no weighted node of it is refused."""
        return self.reuse_factors_of([node.name for node in graph.nodes if "weight" in node.params], graph.name)

    def reuse_factors_of(self, weighted: list[str], graph_name: str) -> dict[str, int]:
        """The reuse factor of each of the ``weighted`` node names (of graph or model
        ``graph_name``); a per-node reuse factor that names none of them is refused."""
        if isinstance(self.reuse_factor, Mapping):
            unknown = sorted(set(self.reuse_factor) - set(weighted))
            if unknown:
                raise TargetError(
                    f"reuse factor given for {', '.join(map(repr, unknown))}, which is not a dense node of graph "
                    f"{graph_name!r}; its dense and conv2d nodes are {', '.join(weighted) or 'none'}"
                )
        return {name: self.reuse_factor_of(name) for name in weighted}

    @property
    def model_reuse_factor(self) -> int:
        """The model-wide reuse factor (1 when it is given per node)."""
        return 1 if isinstance(self.reuse_factor, Mapping) else self.reuse_factor

    def to_dict(self) -> dict[str, Any]:
        """The options as plain JSON types (the board by name)."""
        board = None if self.board is None else _board_value(self.board, "name", required=False)
        rf = dict(self.reuse_factor) if isinstance(self.reuse_factor, Mapping) else self.reuse_factor
        return {
            "backend": self.backend,
            "io_type": self.io_type,
            "strategy": self.strategy,
            "reuse_factor": rf,
            "clock_period_ns": self.clock_ns,
            "hls_tool": self.tool,
            "part": self.device_part,
            "board": board,
        }


def make_target(target: Target | None, **options) -> Target:
    """``target``, or the Target of the ``options`` given (those left None take its defaults);
    both at once is refused. What ``export``, ``estimate`` and ``fit`` call on their arguments."""
    given = {key: value for key, value in options.items() if value is not None}
    if target is None:
        return Target(**given)
    if not isinstance(target, Target):
        raise TargetError(f"target must be an edgebnn.backends.target.Target, got {type(target).__name__}")
    if given:
        raise TargetError(
            f"give either target or its options ({', '.join(given)}), not both; use target.replace(...) to change an option"
        )
    return target


def _board_value(board, key, required=True):
    """``board[key]`` for a mapping, ``board.key`` for an :class:`edgebnn.boards.Board`."""
    value = board.get(key) if isinstance(board, Mapping) else getattr(board, key, None)
    if value is None and required:
        name = board.get("name") if isinstance(board, Mapping) else getattr(board, "name", repr(board))
        raise TargetError(f"board {name} has no {key!r}; add it to the board profile or give it to the target")
    return value
