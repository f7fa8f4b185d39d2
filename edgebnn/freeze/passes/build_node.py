"""Each step becomes its node: one lookup of the step's kind in ``freeze/kinds.py``."""

from __future__ import annotations

from ...training.layers import sums_exactly
from ..items import Step

# the step kinds that sum a weighted layer's products
ACCUMULATORS = ("dense", "conv1d", "conv2d", "depthwise_conv2d", "pointwise")


def run(step: Step, freezing) -> None:
    """Append the step's node to ``freezing.nodes``."""
    from ..kinds import KINDS

    freezing.nodes.append(KINDS[step.kind].node(step, freezing))
    if step.kind in ACCUMULATORS and sums_exactly(step.layer):
        freezing.float64_sums.add(step.name)
