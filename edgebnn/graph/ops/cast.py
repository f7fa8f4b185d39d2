"""``cast``: a fixed-point conversion ``y = type(relu(x))`` (``attrs['relu']``) or ``y = type(x)``,
with ``type``'s rounding and overflow modes: requantization onto a fixed grid where the levels are
too many for thresholds."""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType, on_grid
from ..node import GraphError, Node
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """The input's shape kept and ``attrs['relu']`` a bool."""
    if node.shape != inputs[0].shape or not isinstance(node.attrs.get("relu"), bool):
        raise GraphError(f"{where}: a cast keeps its input's shape and needs attrs['relu'] true or false")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The input codes (after relu when asked) converted onto the node's type."""
    x = codes[0]
    if node.attrs["relu"]:
        x = np.maximum(x, 0)
    return node.type.cast_codes(x, inputs[0].type.lsb_exp)


def cast_node(name: str, src: Node, out_type: FixedType, relu: bool, source: str = "") -> Node:
    """Bounds per overflow mode: rounding is monotone, so without overflow the conversion of
    [lo, hi] is [q(lo), q(hi)]; SAT and SAT_SYM stay monotone; SAT_ZERO sends values past either
    end to 0 (so 0 joins the in-range part); WRAP makes the whole type possible."""
    lo, hi = src.lo, src.hi
    if relu:
        lo, hi = np.maximum(lo, 0.0), np.maximum(hi, 0.0)
    lo_g, hi_g = on_grid(lo, out_type), on_grid(hi, out_type)
    overflows = (lo_g < out_type.min) | (hi_g > out_type.max)
    lo_q, hi_q = out_type.quantize(lo), out_type.quantize(hi)
    if out_type.overflow == "WRAP":
        # wrapped bounds say nothing: the whole range of the type is possible
        lo_q = np.where(overflows, out_type.min, lo_q)
        hi_q = np.where(overflows, out_type.max, hi_q)
    elif out_type.overflow == "SAT_ZERO":
        sat = out_type.replace(overflow="SAT")
        lo_q = np.where(overflows, np.minimum(sat.quantize(lo), 0.0), lo_q)
        hi_q = np.where(overflows, np.maximum(sat.quantize(hi), 0.0), hi_q)
    params = {"lo": lo_q, "hi": hi_q}
    return Node(name, "cast", [src.name], src.shape, out_type, params, {"relu": bool(relu)}, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`cast_node` builds it from its type and input (its bounds)."""
    return cast_node(node.name, inputs[0], node.type, bool(node.attrs["relu"]))


SPEC = OpSpec(
    op="cast",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    attrs={"relu": "true: y = type(relu(x)); false: y = type(x)"},
)
