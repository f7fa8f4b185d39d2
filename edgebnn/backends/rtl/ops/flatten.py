"""``flatten`` (and ``reshape``): the stream order (row-major, channels last) is already the
output's, so only the grouping into beats changes: wiring when the last axis is kept, else the
sample is gathered and emitted in beats of the new last axis."""

from __future__ import annotations

import math

from ..hdl import header
from ._units import rebeat, wiring

FOLDED = False


def check(node, srcs, where) -> None:
    """Every flatten and reshape node is built."""


def unit(node, srcs, name, fold):
    src = srcs[0]
    iw = src.type.width
    a, b = src.shape[-1], node.shape[-1]
    if a == b:
        return wiring(name, a * iw, header(f"{name}: {node.op} {src.shape} -> {node.shape}", ["the beats are unchanged: wiring"]))
    total = math.prod(node.shape)
    what = header(f"{name}: {node.op} {src.shape} -> {node.shape}", [f"beats of {a} codes regrouped into beats of {b}"])
    return rebeat(name, total, a, b, iw, what)
