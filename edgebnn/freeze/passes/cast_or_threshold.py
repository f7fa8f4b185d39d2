"""A requantization that is exactly a fixed-point conversion of (relu of) the accumulator
becomes a cast step (a cast node); any other stays a threshold step."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...graph import cast_node
from .. import forms
from ..items import Planning, Step


def is_cast(step: Step) -> bool:
    """The requant step's quantizer is a plain conversion and its float ops are relus."""
    return forms.is_conversion(step.quantizer) and all(op.relu for op in step.float_ops)


def run(items: Iterable[Step], planning: Planning) -> Iterator[Step]:
    """The steps, each "requant" that is a cast made a "cast" step."""
    for step in items:
        if step.kind == "requant" and is_cast(step):
            step.kind = "cast"
        yield step


def node(step: Step, freezing):
    """The cast node of a cast step, reading its source."""
    relu = any(op.relu for op in step.float_ops)
    return cast_node(step.name, freezing.source(step), forms.output_type(step.quantizer), relu, ",".join(step.sources))
