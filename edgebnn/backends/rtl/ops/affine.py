"""``affine``: per channel ``scale * x + offset`` on constants, exact on the node's type."""

from __future__ import annotations

from ..hdl import cast_function, ext, header, signed_bits, slit
from ._lower import lane
from ._units import map_unit

FOLDED = False


def check(node, srcs, where) -> None:
    """Every affine node is built."""


def unit(node, srcs, name, fold):
    src = srcs[0]
    st, ot = node.fixed_attr("scale_type"), node.fixed_attr("offset_type")
    out = node.type.lsb_exp
    ps, os_ = src.type.lsb_exp + st.lsb_exp - out, ot.lsb_exp - out
    scale, offset = node.params["scale"], node.params["offset"]
    c, iw, ow = node.shape[-1], src.type.width, node.type.width
    big = max(abs(src.type.min_code), abs(src.type.max_code)) * max(abs(int(v)) for v in scale) << ps
    big += max(abs(int(v)) for v in offset) << os_
    tb = signed_bits(-big, big) + 1
    body = []
    for ch in range(c):
        x = ext("in0_data", ch * iw, src.type)
        a, b = int(scale[ch]), int(offset[ch])
        body.append(f"  wire signed [{tb - 1}:0] v_{ch} = (({x} * {slit(a, tb)}) <<< {ps}) + ({slit(b, tb)} <<< {os_});")
        body.append(f"  assign {lane('y', ch, ow)} = to_out(v_{ch});")
    what = header(
        f"{name}: affine y = scale[c] * x + offset[c], {src.type} -> {node.type}",
        ["constant multipliers, 1 cycle per beat, registered"],
    )
    return map_unit(name, [c * iw], c * ow, body, what, cast_function("to_out", tb, 0, node.type))
