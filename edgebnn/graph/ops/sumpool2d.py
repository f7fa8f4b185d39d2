"""``sumpool2d``: the sum of each "valid" window of an (H, W, C) input, exactly: ``attrs['pool']``
[ph, pw] and ``attrs['strides']`` [sh, sw].

The sum of ``N = ph * pw`` values on one grid lies on that grid, so the output type is the
input's grid, wide enough for ``N`` times the per-channel bounds, and the output codes are the
window sums of the input codes. Nothing rounds. It is the exact part of an average whose window
size is not a power of two: freeze follows it with the division as a float op that the next
requantization (a threshold node) absorbs (see ``edgebnn.freeze``).
"""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType
from ..node import GraphError, Node
from ._pooling import pool_attrs, pooled_shape, windows
from ._spec import OpSpec


def _bounds(src: Node, pool) -> tuple[np.ndarray, np.ndarray]:
    n = int(pool[0]) * int(pool[1])
    return src.lo * n, src.hi * n


def output_type(src: Node, pool) -> FixedType:
    """The exact type of the sums: the input's grid, wide enough for ``N`` times its bounds."""
    lo, hi = _bounds(src, pool)
    return FixedType.for_range(float(np.min(lo)), float(np.max(hi)), src.type.lsb_exp)


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (H, W, C) input, the pooled shape, and a type on the input's grid."""
    src = inputs[0]
    want = pooled_shape(src.shape, node.attrs["pool"], node.attrs["strides"])
    if node.shape != want:
        raise GraphError(f"{where}: pools an (H, W, C) input into {want}")
    if node.type.lsb_exp != src.type.lsb_exp:
        raise GraphError(f"{where}: its type {node.type} must have the input's step 2**{src.type.lsb_exp}")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The sum of each window's codes (on the input's grid)."""
    return windows(node, codes[0].astype(np.int64)).sum(axis=(-2, -1))


def sumpool2d_node(name: str, src: Node, pool=(3, 3), strides=None, source: str = "") -> Node:
    """The window sums of ``src`` by ``pool`` windows at ``strides`` (default: the pool)."""
    attrs = pool_attrs(pool, strides)
    shape = pooled_shape(src.shape, attrs["pool"], attrs["strides"])
    lo, hi = _bounds(src, attrs["pool"])
    return Node(name, "sumpool2d", [src.name], shape, output_type(src, attrs["pool"]), {"lo": lo, "hi": hi}, attrs, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`sumpool2d_node` builds it from its input (its bounds)."""
    return sumpool2d_node(node.name, inputs[0], node.attrs["pool"], node.attrs["strides"])


SPEC = OpSpec(
    op="sumpool2d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    attrs={"pool": "[ph, pw] window size", "strides": "[sh, sw]"},
)
