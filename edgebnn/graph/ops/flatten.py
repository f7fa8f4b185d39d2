"""``flatten``: (H, W, C) -> (H*W*C,) in row-major order, as Keras ``Flatten``; bounds per feature."""

from __future__ import annotations

import numpy as np

from ..node import GraphError, Node
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """Output (prod(input shape),) with per-feature bounds."""
    src = inputs[0]
    if node.shape != (int(np.prod(src.shape)),) or node.lo.shape != node.shape:
        raise GraphError(f"{where}: flattens {src.shape} into ({int(np.prod(src.shape))},) with per-feature bounds")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The codes in row-major order, per sample."""
    x = codes[0]
    return x.reshape(len(x), -1)


def flatten_node(name: str, src: Node, source: str = "") -> Node:
    """``src`` flattened; its per-channel bounds repeat at every position."""
    positions = int(np.prod(src.shape[:-1]))
    params = {"lo": np.tile(src.lo, positions), "hi": np.tile(src.hi, positions)}
    return Node(name, "flatten", [src.name], (int(np.prod(src.shape)),), src.type, params, {}, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`flatten_node` builds it from its input (its bounds)."""
    return flatten_node(node.name, inputs[0])


def lattice(node: Node, source, lattice_of) -> tuple[np.ndarray, np.ndarray]:
    """Its input's, per flat feature."""
    base, step = lattice_of(source(node.inputs[0]))
    channels = int(node.shape[-1])
    return np.resize(base, channels), np.resize(step, channels)


SPEC = OpSpec(op="flatten", n_inputs=1, validate=validate, rebuild=rebuild, execute=execute, lattice=lattice)
