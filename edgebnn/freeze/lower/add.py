"""``Add`` of inputs of one shape: an add node, exact on the finest grid of its inputs.

Every input must be on a grid (a quantized tensor or an accumulator before any float op;
passes/branches refuses a float one); the sum is an accumulator-like tensor that float ops and a
quantizer may follow (folded into thresholds as after a dense) or that may end the model.
Keras's float32 sum equals it while it stays below 2**24 steps (passes/float32_exactness)."""

from __future__ import annotations

from collections.abc import Iterator

from ...graph import add_node
from ..items import FreezeError, Layer, Step, where
from . import _merge

LABEL = "Add"
KIND = "add"


def lower(source: Layer) -> Iterator:
    """The add step; refuses inputs of different shapes (Keras would broadcast them)."""
    layer = source.layer
    shapes = _merge.check_shapes(layer)
    if len(set(shapes)) != 1:
        raise FreezeError(f"{where(layer)} adds inputs of shapes {shapes}; only inputs of one shape can be frozen")
    yield _merge.step(layer, KIND)


keras_eval = _merge.keras_eval


def node(step: Step, freezing):
    """The add node reading the step's inputs."""
    return add_node(step.name, freezing.sources(step), ",".join(step.sources))
