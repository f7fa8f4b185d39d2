"""``ZeroPadding2D`` (channels_last): a pad2d node of the code 0, on a tensor on a grid (a
quantized tensor or an accumulator; passes/check_on_grid refuses it among float ops)."""

from __future__ import annotations

from collections.abc import Iterator

from ...graph import pad2d_node
from ..items import FreezeError, Layer, Step, where

LABEL = "ZeroPadding2D"
KIND = "pad2d"


def lower(source: Layer) -> Iterator:
    """A pad2d step."""
    layer = source.layer
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where(layer)} uses data_format={layer.data_format!r}; only channels_last is supported")
    yield Step(layer.name, KIND, layer, sources=[layer.name])


def keras_eval(step: Step, x):
    """The padding as Keras computes it."""
    return step.layer(x)


def node(step: Step, freezing):
    """The pad2d node reading the last node."""
    padding = tuple(tuple(int(a) for a in pair) for pair in step.layer.padding)
    return pad2d_node(step.name, freezing.nodes[-1], padding, 0, ",".join(step.sources))
