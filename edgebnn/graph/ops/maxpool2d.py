"""``maxpool2d``: Keras ``MaxPooling2D`` with "valid" padding on an (H, W, C) input:
``attrs['pool']`` [ph, pw] and ``attrs['strides']`` [sh, sw]; the type and per-channel bounds are
the input's (a maximum of values on one grid is on that grid)."""

from __future__ import annotations

import numpy as np

from ..node import GraphError, Node
from ._pooling import pool_attrs, pooled_shape, windows
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """An (H, W, C) input pooled into the shape these pool and strides give, keeping its type."""
    src = inputs[0]
    want = pooled_shape(src.shape, node.attrs["pool"], node.attrs["strides"])
    if node.shape != want or node.type != src.type:
        raise GraphError(f"{where}: pools an (H, W, C) input into {want} and keeps its type {src.type}")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The maximum code of each window (codes of one type order like their values)."""
    return windows(node, codes[0]).max(axis=(-2, -1))


def maxpool2d_node(name: str, src: Node, pool=(2, 2), strides=None, source: str = "") -> Node:
    """Max pooling of ``src`` by ``pool`` windows at ``strides`` (default: the pool)."""
    attrs = pool_attrs(pool, strides)
    shape = pooled_shape(src.shape, attrs["pool"], attrs["strides"])
    return Node(name, "maxpool2d", [src.name], shape, src.type, {"lo": src.lo.copy(), "hi": src.hi.copy()}, attrs, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`maxpool2d_node` builds it from its input, whose bounds it keeps; after
    a pad whose code lies below every value of the tensor it pads (a "same" pool, as freeze
    lowers it) a window's maximum is one of that tensor's values, so its bounds are those."""
    built = maxpool2d_node(node.name, inputs[0], node.attrs["pool"], node.attrs["strides"])
    return _within_padding(built, inputs[0], nodes)


def _within_padding(built: Node, src: Node, nodes) -> Node:
    if src.op not in ("pad2d", "zeropad1d"):
        return built
    real = nodes[src.inputs[0]]
    pad = float(src.type.from_codes(np.array([src.attrs["pad_code"]]))[0])
    if np.all(pad <= real.lo):
        built.params.update(lo=real.lo.copy(), hi=real.hi.copy())
    return built


def lattice(node: Node, source, lattice_of) -> tuple[np.ndarray, np.ndarray]:
    """Its input's (a maximum is one of its inputs)."""
    return lattice_of(source(node.inputs[0]))


SPEC = OpSpec(
    op="maxpool2d",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    attrs={"pool": "[ph, pw] window size", "strides": "[sh, sw]"},
    lattice=lattice,
)
