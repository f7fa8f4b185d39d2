"""``add``: the elementwise sum of two or more inputs of one shape (Keras ``Add``), exact: the
type is the narrowest on the finest input grid that holds the sum of the inputs' bounds, and
the bounds are those sums."""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType, _codes_to_float, _to_codes  # exact integer bounds, as dot_interval computes them
from ..node import GraphError, Node
from ._merge import finest_lsb, on_grid_codes, result_codes
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """Inputs of the node's shape with bounds of one shape, and a type on their finest grid
    that holds the sum of their bounds."""
    if any(n.shape != node.shape or n.lo.shape != inputs[0].lo.shape for n in inputs):
        raise GraphError(f"{where}: adds inputs of its own shape {node.shape}, got {[n.shape for n in inputs]}")
    lo, hi = _bounds(inputs)
    if node.type.lsb_exp > finest_lsb(inputs) or not (node.type.contains(lo) and node.type.contains(hi)):
        raise GraphError(f"{where}: its type {node.type} does not hold the exact sum of its inputs; build it with add_node")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The exact sum of the inputs' codes on the node's grid."""
    terms = on_grid_codes(inputs, codes, node.type.lsb_exp, node.type.width)
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return result_codes(total, node)


def _bound_codes(inputs: list[Node]) -> tuple[np.ndarray, np.ndarray, int]:
    """The sums of the inputs' bounds as exact integer codes (Python ints) on their finest grid, and its exponent."""
    g = finest_lsb(inputs)
    return sum(_to_codes(n.lo, g) for n in inputs), sum(_to_codes(n.hi, g) for n in inputs), g


def _bounds(inputs: list[Node]) -> tuple[np.ndarray, np.ndarray]:
    """The sums of the inputs' bounds, rounded outward to float64 where they need more than 53 bits."""
    lo, hi, g = _bound_codes(inputs)
    return _codes_to_float(lo, g, down=True), _codes_to_float(hi, g, down=False)


def add_node(name: str, srcs: list[Node], source: str = "") -> Node:
    """The sum of ``srcs`` (two or more nodes of one shape) on their finest grid."""
    lo_codes, hi_codes, g = _bound_codes(srcs)
    out = FixedType.for_codes(min(lo_codes.tolist()), max(hi_codes.tolist()), g)
    lo, hi = _bounds(srcs)
    return Node(name, "add", [s.name for s in srcs], srcs[0].shape, out, {"lo": lo, "hi": hi}, {}, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`add_node` builds it from its inputs (its bounds)."""
    return add_node(node.name, inputs)


SPEC = OpSpec(op="add", n_inputs=2, variadic=True, validate=validate, rebuild=rebuild, execute=execute)
