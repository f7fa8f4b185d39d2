"""``threshold``: per channel, k constant comparators on the input code and a level pick, then
the skid buffer of the output beat (``ops/threshold.py``)."""

from __future__ import annotations

import numpy as np

from ..hdl import code_bits

# LUTs per comparator input bit (a compare with a constant: a carry chain with CARRY4 every 4
# bits) and per output bit (the level pick and the skid buffer's select), fitted by
# bench/rtl_cost_validate.py --refit
LUT_PER_COMPARE_BIT = 0.441
LUT_PER_OUT_BIT = 0.298


def cost(graph, node, fold) -> dict[str, float]:
    from ..ops import fused_reader

    src = graph.sources(node)[0]
    fused = fused_reader(graph, src)
    if fused is not None and fused.name == node.name:  # built into the MVAU it reads (costed there)
        return {}
    c, k = node.params["thresholds"].shape
    xb = code_bits(src.type)
    ow = node.type.width
    return {
        "lut": LUT_PER_COMPARE_BIT * c * k * xb + LUT_PER_OUT_BIT * c * ow,
        # the skid buffer's two beats and its two valid bits; a sign's codes (-1, +1) keep one bit
        "ff": 2 * c * (1 if np.isin(node.params["levels"], (-1, 1)).all() else ow) + 2,
        "carry": c * k * -(-xb // 4) * 0.5,
    }
