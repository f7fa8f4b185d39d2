"""``conv1d``: its 2-D twin (one row) through the window generator and the MVAU."""

from __future__ import annotations

from ....graph.ops._oned import as_2d, row
from . import conv2d

FOLDED = True


def check(node, srcs, where) -> None:
    """Every conv1d node is built."""


def fold_sizes(node, srcs) -> tuple[int, int]:
    k, c, f = node.params["weight"].shape
    return f, k * c


def unit(node, srcs, name, fold, then=None):
    return conv2d.unit(as_2d(node), [row(srcs[0])], name, fold, what="conv1d", then=then)
