"""``ZeroPadding1D``: a zeropad1d node. It must read a tensor on a grid (a quantized tensor or an
accumulator, where a zero is code 0): passes/check_on_grid refuses it among float ops, whose
outputs at the padded positions Keras would not compute."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import zeropad1d_node
from ..items import FreezeError, Layer, Step, where

LABEL = "ZeroPadding1D"
KIND = "zeropad1d"


def lower(source: Layer) -> Iterator:
    """A zeropad1d step (passes/check_on_grid refuses it where float ops are pending)."""
    layer = source.layer
    if len(layer.input.shape) != 3 or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where(layer)} needs a fixed (L, C) input shape; give the model a fixed input shape")
    yield Step(layer.name, KIND, layer, sources=[layer.name])


def keras_eval(step: Step, x):
    """The padding as Keras computes it."""
    return ops.pad(x, ((0, 0), tuple(step.layer.padding), (0, 0)))


def node(step: Step, freezing):
    """The zeropad1d node reading its source."""
    return zeropad1d_node(step.name, freezing.source(step), tuple(step.layer.padding), ",".join(step.sources))
