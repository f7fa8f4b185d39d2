"""``zeropad1d``: Keras ``ZeroPadding1D`` on an (L, C) input: ``attrs['padding']`` [left, right]
positions of zeros (code 0 of the input's type, which every fixed-point type holds). The type is
the input's; the per-channel bounds are the input's widened to hold 0."""

from __future__ import annotations

import numpy as np

from ..node import GraphError, Node
from . import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (L, C) input padded into (left + L + right, C), keeping its type."""
    src = inputs[0]
    pad = node.attrs["padding"]
    if len(src.shape) != 2 or len(pad) != 2 or min(pad) < 0:
        raise GraphError(f"{where}: pads an (L, C) input by [left, right] >= 0 positions")
    want = (src.shape[0] + pad[0] + pad[1], src.shape[1])
    if node.shape != want or node.type != src.type:
        raise GraphError(f"{where}: pads an (L, C) input into {want} and keeps its type {src.type}")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The codes with ``left`` and ``right`` zero codes around the length axis."""
    left, right = node.attrs["padding"]
    return np.pad(codes[0], ((0, 0), (left, right), (0, 0)))


def zeropad1d_node(name: str, src: Node, padding=(1, 1), source: str = "") -> Node:
    """``src`` padded with ``padding`` (left, right) positions of zeros."""
    left, right = (int(p) for p in padding)
    lo, hi = src.lo.copy(), src.hi.copy()
    if left or right:
        lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
    shape = (src.shape[0] + left + right, src.shape[1])
    return Node(name, "zeropad1d", [src.name], shape, src.type, {"lo": lo, "hi": hi}, {"padding": [left, right]}, source)


SPEC = OpSpec(
    op="zeropad1d",
    n_inputs=1,
    validate=validate,
    execute=execute,
    attrs={"padding": "[left, right] positions of zeros"},
)
