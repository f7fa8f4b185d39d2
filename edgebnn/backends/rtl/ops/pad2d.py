"""``pad2d``: the window generator with a 1x1 window and the node's padding: it emits the padded
image, one position per beat."""

from __future__ import annotations

from ....graph.ops._oned import as_2d, row
from ..hdl import header
from ._units import window

FOLDED = False


def check(node, srcs, where) -> None:
    """Every padding node is built."""


def unit(node, srcs, name, fold):
    src = srcs[0]
    if node.op == "zeropad1d":
        node, src = as_2d(node), row(src)
    h, w, c = src.shape
    pad = node.attrs["padding"]
    what = header(f"{name}: padding {pad} of the {h}x{w}x{c} input by code {node.attrs['pad_code']}", ["a 1x1 window generator"])
    return window(name, h, w, c, src.type.width, 1, 1, [1, 1], pad, int(node.attrs["pad_code"]), what)
