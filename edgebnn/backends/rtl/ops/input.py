"""``input``: the top's ``s_axis`` stream itself (the codes are quantized from floats before they
enter the hardware, as the graph's input op quantizes them)."""

from __future__ import annotations

FOLDED = False


def check(node, srcs, where) -> None:
    """Every input node is built."""


def unit(node, srcs, name, fold):
    return None
