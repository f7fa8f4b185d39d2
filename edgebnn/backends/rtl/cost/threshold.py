"""``threshold``: per channel, k constant comparators on the input code and a level pick, then
the skid buffer of the output beat (``ops/threshold.py``)."""

from __future__ import annotations

from ..hdl import code_bits

# LUTs per comparator input bit (a compare with a constant is a carry chain of about one LUT per
# bit, with CARRY4 every 4 bits), per output bit of the level pick and per skid-buffer bit
LUT_PER_COMPARE_BIT = 0.55
LUT_PER_OUT_BIT = 1.0


def cost(graph, node, fold) -> dict[str, float]:
    src = graph.sources(node)[0]
    c, k = node.params["thresholds"].shape
    xb = code_bits(src.type)
    ow = node.type.width
    return {
        "lut": LUT_PER_COMPARE_BIT * c * k * xb + LUT_PER_OUT_BIT * c * ow * (k > 1),
        "ff": 2 * c * ow,
        "carry": c * k * -(-xb // 4) * 0.5,
    }
