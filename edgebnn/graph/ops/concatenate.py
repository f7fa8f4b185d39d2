"""``concatenate``: two or more inputs joined along the channel (last) axis (Keras
``Concatenate(axis=-1)``). The type is one that holds every input's values exactly: the finest
input grid and the range of all their bounds; the codes are moved onto it exactly and the bounds
are the inputs' bounds side by side."""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType
from ..node import GraphError, Node
from ._merge import finest_lsb, on_grid_codes, result_codes
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """Inputs that differ only in their channel count, per-channel bounds, and a type on their
    finest grid that holds every input's bounds."""
    lead = inputs[0].shape[:-1]
    want = lead + (sum(n.shape[-1] for n in inputs),)
    if any(n.shape[:-1] != lead for n in inputs) or node.shape != want or node.lo.shape != (want[-1],):
        raise GraphError(
            f"{where}: joins inputs of one shape but the channel axis into {want} with per-channel bounds, "
            f"got inputs {[n.shape for n in inputs]}"
        )
    if any(n.lo.shape != (n.shape[-1],) for n in inputs):
        raise GraphError(f"{where}: its inputs need per-channel bounds")
    if node.type.lsb_exp > finest_lsb(inputs) or not all(node.type.contains(n.lo) and node.type.contains(n.hi) for n in inputs):
        raise GraphError(f"{where}: its type {node.type} does not hold every input's values; build it with concatenate_node")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The inputs' codes on the node's grid, side by side along the last axis."""
    return result_codes(np.concatenate(on_grid_codes(inputs, codes, node.type.lsb_exp, node.type.width), axis=-1), node)


def concatenate_node(name: str, srcs: list[Node], source: str = "") -> Node:
    """``srcs`` (two or more nodes that differ only in their last axis) joined along it."""
    lo = np.concatenate([s.lo for s in srcs])
    hi = np.concatenate([s.hi for s in srcs])
    out = FixedType.for_range(float(lo.min()), float(hi.max()), finest_lsb(srcs))
    shape = srcs[0].shape[:-1] + (sum(s.shape[-1] for s in srcs),)
    return Node(name, "concatenate", [s.name for s in srcs], shape, out, {"lo": lo, "hi": hi}, {}, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`concatenate_node` builds it from its inputs (its bounds)."""
    return concatenate_node(node.name, inputs)


SPEC = OpSpec(op="concatenate", n_inputs=2, variadic=True, validate=validate, rebuild=rebuild, execute=execute)
