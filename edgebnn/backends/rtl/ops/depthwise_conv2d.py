"""``depthwise_conv2d``: the conv2d of its full kernel (zero outside each channel's block), so the
window generator and the MVAU serve it; the zero weights are skipped by a ternary MVAU or
multiply by constant 0."""

from __future__ import annotations

from ....graph.ops.depthwise_conv2d import full_kernel
from . import conv2d

FOLDED = True


def check(node, srcs, where) -> None:
    """Every depthwise node is built."""


def fold_sizes(node, srcs) -> tuple[int, int]:
    kh, kw, c, m = node.params["weight"].shape
    return c * m, kh * kw * c


def unit(node, srcs, name, fold, then=None):
    return conv2d.unit(node, srcs, name, fold, weight=full_kernel(node.params["weight"]), what="depthwise conv2d", then=then)
