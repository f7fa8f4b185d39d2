"""``affine``: a per-channel fixed-point affine form ``y = scale[c] * x + offset[c]`` (channel ``c``
the last axis): ``params['scale']`` int codes (C,) on ``attrs['scale_type']``, ``params['offset']``
int codes (C,) on ``attrs['offset_type']``. ``type`` is exact: the product and offset grids'
finer one, wide enough for the bounds, so nothing rounds or overflows.

It is what a ``BatchNormalization`` that ends a model becomes when Keras's float32 result lies
exactly on such a form on every reachable accumulator value (``freeze/passes/affine.py``)."""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType
from ..node import GraphError, Node
from ._spec import OpSpec


def validate(node: Node, inputs: list[Node], where: str) -> None:
    """Scale and offset (C,) codes on their types, the input's shape kept, an exact output type."""
    src, c = inputs[0], node.shape[-1]
    st, ot = node.fixed_attr("scale_type"), node.fixed_attr("offset_type")
    s, o = node.params.get("scale"), node.params.get("offset")
    if node.shape != src.shape or s is None or o is None or s.shape != (c,) or o.shape != (c,):
        raise GraphError(f"{where}: keeps its input's shape, with scale and offset of shape ({c},)")
    for key, codes, t in (("scale", s, st), ("offset", o, ot)):
        if t is None or codes.min() < t.min_code or codes.max() > t.max_code:
            raise GraphError(f"{where}: {key} codes do not fit {key}_type {t}")
    if node.type.lsb_exp > min(src.type.lsb_exp + st.lsb_exp, ot.lsb_exp) or node.type.overflow != "WRAP":
        raise GraphError(f"{where}: its type {node.type} is not exact for these scale and offset types")


def execute(node: Node, inputs: list[Node], codes: list[np.ndarray]) -> np.ndarray:
    """``scale * x + offset`` on integer codes, exactly, on the node's type."""
    src = inputs[0]
    st, ot = node.fixed_attr("scale_type"), node.fixed_attr("offset_type")
    out = node.type.lsb_exp
    prod = codes[0].astype(np.int64) * node.params["scale"].astype(np.int64)
    y = (prod << (src.type.lsb_exp + st.lsb_exp - out)) + (node.params["offset"].astype(np.int64) << (ot.lsb_exp - out))
    return node.type.cast_codes(y, out)


def describe(node: Node) -> str:
    return f" scale {node.attrs['scale_type']} offset {node.attrs['offset_type']}"


def affine_node(name: str, src: Node, scale, scale_type: FixedType, offset, offset_type: FixedType, source: str = "") -> Node:
    """An affine node on ``src`` (see the module docstring) with the narrowest exact type."""
    scale = np.asarray(scale, dtype=np.int64)
    offset = np.asarray(offset, dtype=np.int64)
    a, b = scale_type.from_codes(scale), offset_type.from_codes(offset)
    ends = np.stack([a * src.lo + b, a * src.hi + b])  # exact: dyadic values of few bits
    lo, hi = ends.min(axis=0), ends.max(axis=0)
    lsb_exp = min(src.type.lsb_exp + scale_type.lsb_exp, offset_type.lsb_exp)
    out_type = FixedType.for_range(float(lo.min()), float(hi.max()), lsb_exp)
    params = {"scale": scale, "offset": offset, "lo": lo, "hi": hi}
    attrs = {"scale_type": str(scale_type), "offset_type": str(offset_type)}
    return Node(name, "affine", [src.name], src.shape, out_type, params, attrs, source)


def rebuild(node: Node, inputs: list[Node], nodes) -> Node:
    """The node as :func:`affine_node` builds it from its scale, offset and input (its bounds)."""
    p, t = node.params, node.fixed_attr
    return affine_node(node.name, inputs[0], p["scale"], t("scale_type"), p["offset"], t("offset_type"))


SPEC = OpSpec(
    op="affine",
    n_inputs=1,
    validate=validate,
    rebuild=rebuild,
    execute=execute,
    describe=describe,
    params={
        "scale": "int codes (C,) on attrs['scale_type']: y = scale * x + offset per channel",
        "offset": "int codes (C,) on attrs['offset_type']",
    },
    attrs={"scale_type": "fixed-point type of the scale codes", "offset_type": "fixed-point type of the offset codes"},
)
