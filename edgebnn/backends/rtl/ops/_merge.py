"""The merge lowerings (``add``, ``concatenate``): a join of the input streams, each input's codes
moved onto the node's grid (a left shift, exact), then summed or placed side by side."""

from __future__ import annotations

from ..hdl import code_bits, ext, header
from ._lower import lane
from ._units import map_unit

FOLDED = False
MULTI_INPUT = True


def check(node, srcs, where) -> None:
    """Every merge node is built."""


def merge_unit(node, srcs, name, fold):
    ow, g = node.type.width, node.type.lsb_exp
    sb = ow + 2
    body = []
    if node.op == "add":
        c = node.shape[-1]
        for ch in range(c):
            terms = []
            for i, s in enumerate(srcs):
                terms.append(f"({ext(f'in{i}_data', ch * s.type.width, s.type)} <<< {s.type.lsb_exp - g})")
            body.append(f"  wire signed [{sb - 1}:0] s_{ch} = {' + '.join(terms)};")
            body.append(f"  assign {lane('y', ch, ow)} = s_{ch}[{ow - 1}:0];")
        what = f"elementwise sum of {len(srcs)} inputs"
    else:
        at = 0
        for i, s in enumerate(srcs):
            for ch in range(s.shape[-1]):
                x = ext(f"in{i}_data", ch * s.type.width, s.type)
                body.append(
                    f"  wire signed [{max(sb, code_bits(s.type) + s.type.lsb_exp - g)}:0] v_{at} = {x} <<< {s.type.lsb_exp - g};"
                )
                body.append(f"  assign {lane('y', at, ow)} = v_{at}[{ow - 1}:0];")
                at += 1
        what = f"{len(srcs)} inputs joined along the channels"
    head = header(
        f"{name}: {what} -> {node.type}", ["a join: a beat leaves when every input holds one; 1 cycle per beat, registered"]
    )
    return map_unit(name, [s.shape[-1] * s.type.width for s in srcs], node.shape[-1] * ow, body, head)
