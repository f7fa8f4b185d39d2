"""Each step becomes its node: one lookup of the step's kind in ``freeze/kinds.py``."""

from __future__ import annotations

from ..items import Step


def run(step: Step, freezing) -> None:
    """Append the step's node to ``freezing.nodes``."""
    from ..kinds import KINDS

    freezing.nodes.append(KINDS[step.kind].node(step, freezing))
