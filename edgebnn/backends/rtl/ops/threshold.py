"""``threshold``: per channel, the count of thresholds the input reaches (constant comparators)
selects the level; the result is registered (the lookup never sits on a path between units)."""

from __future__ import annotations

from ..hdl import code_bits, ext, header, hex_word, signed_bits, slit
from ._lower import lane
from ._units import map_unit

FOLDED = False


def check(node, srcs, where) -> None:
    """Every threshold node is built."""


def unit(node, srcs, name, fold):
    src = srcs[0]
    t, lv = node.params["thresholds"], node.params["levels"]
    c, k = t.shape
    iw, ow = src.type.width, node.type.width
    xb = code_bits(src.type)
    nb = signed_bits(0, k)
    body = []
    for ch in range(c):
        levels = [int(v) for v in lv[ch]]
        body.append(f"  // channel {ch}: thresholds {[int(v) for v in t[ch]]} -> levels {levels}")
        body.append(f"  wire signed [{xb - 1}:0] x_{ch} = {ext('in0_data', ch * iw, src.type)};")
        reached = " + ".join(f"{{{nb - 1}'d0, x_{ch} >= {slit(int(v), xb)}}}" for v in t[ch]) or f"{nb}'d0"
        body.append(f"  wire [{nb - 1}:0] n_{ch} = {reached};")
        pick = f"{ow}'h{hex_word(levels[-1], ow)}"
        for j in reversed(range(k)):
            pick = f"n_{ch} == {j} ? {ow}'h{hex_word(levels[j], ow)} : {pick}"
        body.append(f"  assign {lane('y', ch, ow)} = {pick};")
    what = header(
        f"{name}: threshold, {k} threshold(s) per channel, {c} channels",
        [f"y = levels[c][count of thresholds[c] <= x], {src.type} -> {node.type}", "1 cycle per beat, registered"],
    )
    return map_unit(name, [c * iw], c * ow, body, what)
