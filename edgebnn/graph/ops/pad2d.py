"""``pad2d``: an (H, W, C) input padded by a constant: ``attrs['padding']`` [[top, bottom], [left,
right]] rows and columns of ``attrs['pad_code']`` (a code of the input's type), as Keras
``ZeroPadding2D`` (code 0) or the padding of a convolution with larq's ``pad_values``. The type
is the input's; the bounds widen to hold the padding value."""

from __future__ import annotations

import numpy as np

from ..node import GraphError, Node
from ._lattice import gcd, reduced
from ._spec import OpSpec


def padded_shape(shape, padding) -> tuple[int, int, int]:
    (pt, pb), (pl, pr) = padding
    return (shape[0] + pt + pb, shape[1] + pl + pr, shape[2])


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (H, W, C) input, the padded shape, the input's type and a pad code of it."""
    src = inputs[0]
    if len(src.shape) != 3:
        raise GraphError(f"{where}: pads an (H, W, C) input, got {src.shape}")
    want = padded_shape(src.shape, node.attrs["padding"])
    if node.shape != want or node.type != src.type:
        raise GraphError(f"{where}: pads {src.shape} into {want} and keeps its type {src.type}")
    if not src.type.min_code <= int(node.attrs["pad_code"]) <= src.type.max_code:
        raise GraphError(f"{where}: pad_code {node.attrs['pad_code']} is not a code of the input type {src.type}")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The codes with the padding rows and columns of ``pad_code``."""
    (pt, pb), (pl, pr) = node.attrs["padding"]
    return np.pad(codes[0], ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=int(node.attrs["pad_code"]))


def pad2d_node(name: str, src: Node, padding=((1, 1), (1, 1)), pad_code: int = 0, source: str = "") -> Node:
    """``src`` padded by ``padding`` [[top, bottom], [left, right]] of the code ``pad_code``."""
    (pt, pb), (pl, pr) = padding
    attrs = {"padding": [[int(pt), int(pb)], [int(pl), int(pr)]], "pad_code": int(pad_code)}
    pad = float(src.type.from_codes(np.array([pad_code]))[0])
    lo, hi = np.minimum(src.lo, pad), np.maximum(src.hi, pad)
    if not any(a for pair in attrs["padding"] for a in pair):
        lo, hi = src.lo.copy(), src.hi.copy()
    return Node(
        name, "pad2d", [src.name], padded_shape(src.shape, attrs["padding"]), src.type, {"lo": lo, "hi": hi}, attrs, source
    )


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`pad2d_node` builds it from its input and pad code (its bounds)."""
    return pad2d_node(node.name, inputs[0], node.attrs["padding"], node.attrs["pad_code"])


def lattice(node: Node, source, lattice_of) -> tuple[np.ndarray, np.ndarray]:
    """Its input's, with the pad code too (the padded positions hold it)."""
    base, step = lattice_of(source(node.inputs[0]))
    pad = int(node.attrs["pad_code"])
    return reduced(base, np.array([gcd([s, pad - b]) for b, s in zip(base, step)], dtype=np.int64))


SPEC = OpSpec(
    op="pad2d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    attrs={
        "padding": "[[top, bottom], [left, right]] rows and columns added",
        "pad_code": "the padding value as a code of the input's type",
    },
    lattice=lattice,
)
