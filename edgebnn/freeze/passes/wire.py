"""Each step's inputs (``Step.inputs``): the steps passes/branches recorded for it, else the
step before it (the stream's order is the data flow there); none for the input."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..items import Planning, Step


def run(items: Iterable[Step], planning: Planning) -> Iterator[Step]:
    """The steps, each with its inputs."""
    previous = None
    for step in items:
        if step.kind != "input":
            step.inputs = list(planning.reads.get(step.name, [previous.name]))
        previous = step
        yield step
