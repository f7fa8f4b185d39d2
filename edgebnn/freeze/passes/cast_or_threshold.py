"""A requantization that is exactly a fixed-point conversion of (relu of) the accumulator
becomes a cast step (a cast node); any other stays a threshold step. A conversion whose source
lies wholly below half the new lsb (a layer whose weights all round to zero, a tiny accumulator
before a coarse quantizer) fails an ap_fixed assertion in hls4ml's C-simulation
(:func:`edgebnn.fixed.cast_asserts`): it becomes a threshold node (none or few thresholds)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...fixed import cast_asserts
from ...graph import cast_node
from .. import forms
from ..items import Planning, Step
from . import thresholds


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
    src, out_type = freezing.source(step), forms.output_type(step.quantizer)
    # a sum Keras rounds to float32 before converting it would be rounded twice: thresholds replay that
    if cast_asserts(src.type, out_type) or src.name in freezing.float64_sums:
        step.kind = "requant"  # as Keras computes it: the thresholds of the same conversion
        return thresholds.node(step, freezing)
    return cast_node(step.name, src, out_type, relu, ",".join(step.sources))
