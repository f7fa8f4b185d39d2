"""The pooling lowerings: the window generator ("valid" windows) feeding a unit that reduces each
window per channel (max of the codes, or their sum: a sum pool's, and an average pool's mean on
its finer grid)."""

from __future__ import annotations

from ....graph.ops._oned import as_2d, row
from ..hdl import code_bits, ext, header
from ._lower import lane, windowed
from ._units import map_unit

FOLDED = False


def check(node, srcs, where) -> None:
    """Every pooling node is built."""


def pool_unit(node, srcs, name, fold):
    src = srcs[0]
    if len(node.shape) == 2:  # a 1-D pool: its 2-D twin of one row
        node, src = as_2d(node), row(src)
    (ph, pw), strides = node.attrs["pool"], node.attrs["strides"]
    c, iw, ow = node.shape[-1], src.type.width, node.type.width
    kind = node.op[:3]
    xb = code_bits(src.type)
    taps = ph * pw

    def reduce(inner):
        body = []
        for ch in range(c):
            xs = [ext("in0_data", (t * c + ch) * iw, src.type) for t in range(taps)]
            if kind == "max":
                body.append(f"  reg signed [{xb - 1}:0] m_{ch};")
                body.append("  always @* begin")
                body.append(f"    m_{ch} = {xs[0]};")
                for x in xs[1:]:
                    body.append(f"    if ({x} > m_{ch}) m_{ch} = {x};")
                body.append("  end")
                body.append(f"  assign {lane('y', ch, ow)} = m_{ch}[{ow - 1}:0];")
            else:
                sb = max(ow, xb) + taps.bit_length() + 1
                body.append(f"  wire signed [{sb - 1}:0] s_{ch} = {' + '.join(xs)};")
                body.append(f"  assign {lane('y', ch, ow)} = s_{ch}[{ow - 1}:0];")
        what = header(
            f"{inner}: {'maximum' if kind == 'max' else 'sum'} of each {ph}x{pw} window per channel",
            ["1 cycle per window, registered"],
        )
        return map_unit(inner, [taps * c * iw], c * ow, body, what)

    op = {"max": "max pooling", "avg": "average pooling (the window sum on a grid 2**k finer)", "sum": "sum pooling"}[kind]
    return windowed(node, src, name, reduce, ph, pw, strides, [[0, 0], [0, 0]], 0, f"{op} {ph}x{pw}, strides {list(strides)}")
