"""Units that move or map codes one beat at a time (cast, affine, pooling, pads, merges, the
regrouping of beats): a skid buffer of the output beat and the lane logic, by the output bits."""

from __future__ import annotations

import math


def cost(graph, node, fold) -> dict[str, float]:
    if node.op in ("flatten", "reshape", "input"):  # wiring: no logic
        return {}
    out_bits = node.type.width * (node.shape[-1] if node.shape else 1)
    in_bits = sum(s.type.width * (s.shape[-1] if s.shape else 1) for s in graph.sources(node))
    beats_in = max(math.prod(graph.sources(node)[0].shape[:-1]), 1) if graph.sources(node) else 1
    beats_out = max(math.prod(node.shape[:-1]), 1)
    # the skid buffer holds two output beats; a regrouping stores the whole sample
    ff = 2 * out_bits + (in_bits * beats_in if beats_in != beats_out else 0)
    lut = out_bits + 0.5 * in_bits
    return {"lut": lut, "ff": ff}
