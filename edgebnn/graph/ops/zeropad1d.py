"""``zeropad1d``: an (L, C) input padded by a constant: ``attrs['padding']`` [left, right]
positions of ``attrs['pad_code']`` (a code of the input's type), as Keras ``ZeroPadding1D`` (code
0, which every fixed-point type holds) or the "same" padding of a ``QuantConv1D`` with larq's
``pad_values``. It is the pad2d of one row (``_oned``): the code and the bounds are checked and
widened as pad2d's. The type is the input's; the per-channel bounds are the input's widened to
hold the padding value."""

from __future__ import annotations

import numpy as np

from ..node import GraphError, Node
from . import pad2d
from ._oned import as_2d, from_2d, row
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (L, C) input padded into (left + L + right, C), keeping its type, and a pad code of it."""
    src = inputs[0]
    pad = node.attrs["padding"]
    if len(src.shape) != 2 or len(pad) != 2 or min(pad) < 0:
        raise GraphError(f"{where}: pads an (L, C) input by [left, right] >= 0 positions")
    want = (src.shape[0] + pad[0] + pad[1], src.shape[1])
    if node.shape != want or node.type != src.type:
        raise GraphError(f"{where}: pads an (L, C) input into {want} and keeps its type {src.type}")
    pad2d.validate(as_2d(node), [row(src)], where)


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The codes with ``left`` and ``right`` positions of ``pad_code`` around the length axis."""
    left, right = node.attrs["padding"]
    return np.pad(codes[0], ((0, 0), (left, right), (0, 0)), constant_values=int(node.attrs["pad_code"]))


def zeropad1d_node(name: str, src: Node, padding=(1, 1), pad_code: int = 0, source: str = "") -> Node:
    """``src`` padded with ``padding`` (left, right) positions of the code ``pad_code``."""
    left, right = (int(p) for p in padding)
    twin = pad2d.pad2d_node(name, row(src), ((0, 0), (left, right)), pad_code, source)
    return from_2d(twin, "zeropad1d", {"padding": [left, right]})


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`zeropad1d_node` builds it from its input and pad code (its bounds)."""
    return zeropad1d_node(node.name, inputs[0], node.attrs["padding"], node.attrs["pad_code"])


SPEC = OpSpec(
    op="zeropad1d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    attrs={
        "padding": "[left, right] positions added",
        "pad_code": "the padding value as a code of the input's type",
    },
)
