"""``ZeroPadding2D`` (channels_last): a pad2d node of the code 0, on a tensor on a grid (a
quantized tensor or an accumulator; passes/check_on_grid refuses it among float ops). The pad2d
step of a ``QuantConv2D``, ``QuantDepthwiseConv2D`` or ``QuantSeparableConv2D`` with "same"
padding and non-zero ``pad_values`` (``conv.pad_steps``) is built here too: that value as a code
of the quantized input's type."""

from __future__ import annotations

from collections.abc import Iterator

import keras

from ...graph import pad2d_node
from ...training.layers import _pad_input
from ..items import FreezeError, Layer, Step, where
from ._padding import explicit_padding

LABEL = "ZeroPadding2D"
KIND = "pad2d"


def lower(source: Layer) -> Iterator:
    """A pad2d step."""
    layer = source.layer
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where(layer)} uses data_format={layer.data_format!r}; only channels_last is supported")
    yield Step(layer.name, KIND, layer, sources=[layer.name])


def keras_eval(step: Step, x):
    """The padding as Keras computes it (a convolution's: as the layer pads its quantized input)."""
    if isinstance(step.layer, keras.layers.ZeroPadding2D):
        return step.layer(x)
    return _pad_input(step.layer, x)[0]


def node(step: Step, freezing):
    """The pad2d node reading its source."""
    layer, src = step.layer, freezing.source(step)
    if isinstance(layer, keras.layers.ZeroPadding2D):
        padding = tuple(tuple(int(a) for a in pair) for pair in layer.padding)
        return pad2d_node(step.name, src, padding, 0, ",".join(step.sources))
    padding, pad_code = explicit_padding(layer, src)
    return pad2d_node(step.name, src, padding, pad_code, ",".join(step.sources))
