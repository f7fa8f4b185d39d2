"""``cast``: each code converted onto the node's type (after relu when asked) by the exact
rounding and overflow of ``edgebnn.fixed``."""

from __future__ import annotations

from ..hdl import cast_function, code_bits, ext, header
from ._lower import lane
from ._units import map_unit

FOLDED = False


def check(node, srcs, where) -> None:
    """Every cast node is built."""


def unit(node, srcs, name, fold):
    src = srcs[0]
    c, iw, ow = node.shape[-1], src.type.width, node.type.width
    xb = code_bits(src.type)
    body = []
    for ch in range(c):
        x = ext("in0_data", ch * iw, src.type)
        if node.attrs["relu"]:
            body.append(f"  wire signed [{xb - 1}:0] x_{ch} = {x};")
            x = f"(x_{ch}[{xb - 1}] ? {xb}'sd0 : x_{ch})"
        body.append(f"  assign {lane('y', ch, ow)} = to_out({x});")
    relu = "relu, then " if node.attrs["relu"] else ""
    what = header(
        f"{name}: cast {src.type} -> {node.type}",
        [f"{relu}{node.type.rounding} rounding, {node.type.overflow} overflow", "1 cycle per beat, registered"],
    )
    return map_unit(
        name, [c * iw], c * ow, body, what, cast_function("to_out", xb, node.type.lsb_exp - src.type.lsb_exp, node.type)
    )
