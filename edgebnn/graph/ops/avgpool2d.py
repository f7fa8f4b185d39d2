"""``avgpool2d``: Keras ``AveragePooling2D`` with "valid" padding on an (H, W, C) input, exactly:
``attrs['pool']`` [ph, pw] and ``attrs['strides']`` [sh, sw], where the window holds a power of
two ``N = ph * pw = 2**k`` of values.

The mean of ``N`` values on one grid is their sum on a grid ``N`` times finer, so the output
type is the input's with ``k`` more fraction bits (the narrowest that holds the per-channel
bounds, which are the input's: a mean lies between its values) and the output codes are the
window sums of the input codes. Nothing rounds. A window whose size is not a power of two has a
mean no fixed-point type holds; freeze makes it a sumpool2d node and folds the division into the next
requantization (see ``edgebnn.freeze``).
"""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType
from ..node import GraphError, Node
from ._lattice import reduced
from ._pooling import pool_attrs, pooled_shape, windows
from ._spec import OpSpec


def window_bits(pool) -> int | None:
    """``k`` with ``ph * pw == 2**k``, or None when the window size is not a power of two."""
    n = int(pool[0]) * int(pool[1])
    return n.bit_length() - 1 if n >= 1 and n & (n - 1) == 0 else None


def output_type(src: Node, pool) -> FixedType:
    """The exact type of the means: the input grid made ``2**k`` times finer, wide enough for
    the input's bounds."""
    return FixedType.for_range(float(np.min(src.lo)), float(np.max(src.hi)), src.type.lsb_exp - window_bits(pool))


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """A power-of-two window over an (H, W, C) input, the pooled shape, and the exact mean type."""
    src = inputs[0]
    pool = node.attrs["pool"]
    if window_bits(pool) is None:
        raise GraphError(
            f"{where}: a {pool[0]}x{pool[1]} window does not hold a power of two of values, so its mean is on no fixed-point grid"
        )
    want = pooled_shape(src.shape, pool, node.attrs["strides"])
    if node.shape != want:
        raise GraphError(f"{where}: pools an (H, W, C) input into {want}")
    if node.type.lsb_exp != src.type.lsb_exp - window_bits(pool):
        raise GraphError(
            f"{where}: its type {node.type} must have a step of 2**{src.type.lsb_exp - window_bits(pool)}, "
            f"the input's step divided by the window size"
        )


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The sum of each window's codes: the mean's code on the output grid."""
    return windows(node, codes[0].astype(np.int64)).sum(axis=(-2, -1))


def avgpool2d_node(name: str, src: Node, pool=(2, 2), strides=None, source: str = "") -> Node:
    """Average pooling of ``src`` by ``pool`` windows (a power of two of values) at ``strides``
    (default: the pool)."""
    attrs = pool_attrs(pool, strides)
    if window_bits(attrs["pool"]) is None:
        raise ValueError(f"avgpool2d_node needs a window of a power of two of values, got {attrs['pool']}")
    shape = pooled_shape(src.shape, attrs["pool"], attrs["strides"])
    params = {"lo": src.lo.copy(), "hi": src.hi.copy()}
    return Node(name, "avgpool2d", [src.name], shape, output_type(src, attrs["pool"]), params, attrs, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`avgpool2d_node` builds it from its input (its bounds)."""
    return avgpool2d_node(node.name, inputs[0], node.attrs["pool"], node.attrs["strides"])


def lattice(node: Node, source, lattice_of) -> tuple[np.ndarray, np.ndarray]:
    """The window sums of its input's lattice, on its finer grid (every code unless that grid is
    finer by a multiple of the window's size)."""
    src = source(node.inputs[0])
    base, step = lattice_of(src)
    n = int(np.prod(node.attrs["pool"]))
    scale = 2.0 ** (src.type.lsb_exp - node.type.lsb_exp)  # input codes on the output's grid, per value
    if scale < 1 or scale != int(scale) or int(scale) % n:
        channels = int(node.shape[-1])
        return np.zeros(channels, dtype=np.int64), np.ones(channels, dtype=np.int64)
    r = int(scale) // n  # a window sum of n codes is its mean times n on the input grid
    return reduced(base * n * r, step * r)


SPEC = OpSpec(
    op="avgpool2d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    attrs={"pool": "[ph, pw] window size, ph * pw a power of two", "strides": "[sh, sw]"},
    lattice=lattice,
)
