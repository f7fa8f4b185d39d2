"""``input``: the raw float input, quantized onto the node's ``type`` (its rounding and overflow
modes apply). The graph's first node and its only node without inputs."""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType
from ..node import Node
from ._spec import OpSpec
from ._weighted import compact_dtype


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """Nothing beyond the graph's own checks (no inputs, bounds within the type)."""


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The codes of the raw float batch ``codes[0]`` on the node's type (an input node has no
    source nodes: its one value is the float batch itself), in the compact dtype of the type
    (``_weighted.compact_dtype``: int8 for up to 8 bits), as every code the emulator passes on."""
    t = node.type
    return t.codes(codes[0], dtype=compact_dtype(t) if t.width <= 63 else None)


def input_node(name: str, shape, type_: FixedType, source: str = "") -> Node:
    """The graph input of ``shape`` (no batch axis) on ``type_``; its bounds are the type's range."""
    c = shape[-1]
    return Node(name, "input", [], tuple(shape), type_, {"lo": np.full(c, type_.min), "hi": np.full(c, type_.max)}, {}, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`input_node` builds it from the node's shape and type (its bounds)."""
    return input_node(node.name, node.shape, node.type)


SPEC = OpSpec(op="input", n_inputs=0, validate=validate, rebuild=rebuild, execute=execute)
