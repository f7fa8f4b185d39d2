"""``Concatenate`` along the channel (last) axis: a concatenate node whose type holds every
input's values exactly (the finest input grid), the codes moved onto it exactly.

Every input must be on a grid (passes/branches refuses a float one); like an accumulator the
result may be followed by float ops and a quantizer, or end the model."""

from __future__ import annotations

from collections.abc import Iterator

from ...graph import concatenate_node
from ..items import FreezeError, Layer, Step, where
from . import _merge

LABEL = "Concatenate"
KIND = "concatenate"


def lower(source: Layer) -> Iterator:
    """The concatenate step; refuses an axis other than the channel axis."""
    layer = source.layer
    shapes = _merge.check_shapes(layer)
    rank = len(shapes[0]) + 1
    if layer.axis not in (-1, rank - 1):
        raise FreezeError(
            f"{where(layer)} joins its inputs along axis {layer.axis}; only the channel axis (axis=-1) can be frozen"
        )
    yield _merge.step(layer, KIND)


keras_eval = _merge.keras_eval


def node(step: Step, freezing):
    """The concatenate node reading the step's inputs."""
    return concatenate_node(step.name, freezing.sources(step), ",".join(step.sources))
