"""The RTL units' resource models: LUT, FF, CARRY, DSP and block RAM of each node's unit as a
function of its folding and widths, in xc7 units (6-input LUTs, BRAM18), before any synthesis.

The structure of each model is read off the Verilog the unit's lowering writes (which registers
it keeps, which adders, muxes and ROMs it builds); the few coefficients that say how many LUTs
Yosys's ``synth_xilinx -flatten -abc9`` spends on each are fitted to its counts on generated
designs (``bench/rtl_cost_validate.py --refit``) and checked on designs not fitted on (the same
script without it). ``fit`` searches foldings with these models.
"""

from __future__ import annotations

import dataclasses
import math

from . import mvau, streams, threshold

# op -> the cost function (graph, node, fold) of its unit
COSTS = {
    "dense": mvau.cost,
    "conv1d": mvau.cost,
    "conv2d": mvau.cost,
    "depthwise_conv2d": mvau.cost,
    "threshold": threshold.cost,
}


@dataclasses.dataclass(frozen=True)
class Cost:
    lut: int = 0
    ff: int = 0
    carry: int = 0
    dsp: int = 0
    bram: int = 0  # BRAM18 blocks

    def __add__(self, other: Cost) -> Cost:
        return Cost(*(getattr(self, f.name) + getattr(other, f.name) for f in dataclasses.fields(self)))

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def node_cost(graph, node, fold=None) -> Cost:
    """The unit of ``node`` (of ``graph``) folded ``fold`` = (PE, SIMD) (weighted nodes only)."""
    fn = COSTS.get(node.op, streams.cost)
    return Cost(**{k: math.ceil(v - 0.5) for k, v in fn(graph, node, fold).items()})


def design_cost(graph, folding: dict) -> tuple[Cost, dict[str, Cost]]:
    """The whole design's cost (every computing node's unit) and each node's, for ``folding``
    (node name -> (PE, SIMD), every weighted node)."""
    per = {node.name: node_cost(graph, node, folding.get(node.name)) for node in graph.compute_nodes()}
    total = Cost()
    for c in per.values():
        total = total + c
    return total, per


unit_features = mvau.features
