"""``dense``: ``y = x @ weight + bias`` with ``params['weight']`` int codes (n_in, n_out) on
``attrs['weight_type']`` and optional ``params['bias']`` codes on ``attrs['bias_type']``.
``type`` is the accumulator type, wide enough that nothing rounds or overflows."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...fixed import FixedType, dot_interval
from ..node import Node
from ._lattice import weighted
from ._spec import OpSpec
from ._weighted import check_weights, weighted_sum


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """Weight (n_in, n_out) codes that fit ``weight_type``; a bias (n_out,) with its ``bias_type``."""
    check_weights(node, inputs[0], where)


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """The exact weighted sum over the last axis, on the accumulator type."""
    return weighted_sum(node, inputs[0], codes[0], node.params["weight"])


def describe(node: Node) -> str:
    return f" weight {node.attrs['weight_type']}"


def dense_node(
    name: str, src: Node, weight, weight_type: FixedType, bias=None, bias_type: FixedType | None = None, source: str = ""
) -> Node:
    """A dense node whose accumulator type is the narrowest exact one for these weights."""
    weight = np.asarray(weight, dtype=np.int64)
    w_vals = weight_type.from_codes(weight)
    lo, hi = dot_interval(src.lo, src.hi, w_vals)  # over the last axis, like keras Dense
    lsb_exp = src.type.lsb_exp + weight_type.lsb_exp
    params = {"weight": weight}
    attrs: dict[str, Any] = {"weight_type": str(weight_type)}
    if bias is not None:
        bias = np.asarray(bias, dtype=np.int64)
        b_vals = bias_type.from_codes(bias)
        lo, hi = lo + b_vals, hi + b_vals
        lsb_exp = min(lsb_exp, bias_type.lsb_exp)
        params["bias"] = bias
        attrs["bias_type"] = str(bias_type)
    acc_type = FixedType.for_range(float(lo.min()), float(hi.max()), lsb_exp)
    params.update(lo=lo, hi=hi)
    return Node(name, "dense", [src.name], src.shape[:-1] + (weight.shape[1],), acc_type, params, attrs, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`dense_node` builds it from its weights and its input (its bounds)."""
    return dense_node(node.name, inputs[0], node.params["weight"], node.fixed_attr("weight_type"), *_bias(node))


def _bias(node: Node) -> tuple:
    return (node.params["bias"], node.fixed_attr("bias_type")) if "bias" in node.params else (None, None)


def lattice(node: Node, source, lattice_of) -> tuple[np.ndarray, np.ndarray]:
    """The weighted sum of its input's lattice, on the accumulator's codes."""
    src = source(node.inputs[0])
    return weighted(node, src, *lattice_of(src))


SPEC = OpSpec(
    op="dense",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    describe=describe,
    params={"weight": "int codes (n_in, n_out) on attrs['weight_type']"},
    attrs={"weight_type": "fixed-point type of the weight codes"},
    optional_params={"bias": "int codes (n_out,) on attrs['bias_type'], added to the sum"},
    optional_attrs={"bias_type": "fixed-point type of the bias codes (required with params['bias'])"},
    lattice=lattice,
)
