"""``reshape``: the codes viewed in another shape of the same size, in row-major order (channels
last), as Keras ``Reshape``; its type is the input's and its bounds are per channel of the new
last axis (the widest of the input bounds that land on that channel)."""

from __future__ import annotations

import numpy as np

from ..node import GraphError, Node
from ._spec import OpSpec


def _bounds(src: Node, shape) -> tuple[np.ndarray, np.ndarray]:
    positions = int(np.prod(src.shape)) // src.lo.shape[-1]
    lo, hi = (np.tile(b, positions).reshape(-1, shape[-1]) for b in (src.lo, src.hi))
    return lo.min(axis=0), hi.max(axis=0)


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """The same number of values in the output shape, and the input's type."""
    src = inputs[0]
    if int(np.prod(node.shape)) != int(np.prod(src.shape)) or node.type != src.type:
        raise GraphError(f"{where}: reshapes {src.shape} into a shape of {int(np.prod(src.shape))} values of type {src.type}")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The codes in row-major order, per sample, in the node's shape."""
    x = codes[0]
    return x.reshape((len(x), *node.shape))


def reshape_node(name: str, src: Node, shape, source: str = "") -> Node:
    """``src`` viewed in ``shape`` (batch axis excluded)."""
    shape = tuple(int(d) for d in shape)
    if int(np.prod(shape)) != int(np.prod(src.shape)):
        raise ValueError(f"reshape_node cannot view {src.shape} as {shape}")
    lo, hi = _bounds(src, shape)
    return Node(name, "reshape", [src.name], shape, src.type, {"lo": lo, "hi": hi}, {}, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`reshape_node` builds it from its input and shape (its bounds)."""
    return reshape_node(node.name, inputs[0], node.shape)


SPEC = OpSpec(op="reshape", n_inputs=1, validate=validate, rebuild=rebuild, execute=execute)
