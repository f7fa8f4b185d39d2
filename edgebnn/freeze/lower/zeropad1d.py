"""``ZeroPadding1D``: a zeropad1d node of the code 0. It must read a tensor on a grid (a quantized
tensor or an accumulator, where a zero is code 0): passes/check_on_grid refuses it among float
ops, whose outputs at the padded positions Keras would not compute. The zeropad1d step of a
``QuantConv1D`` with "same" padding and non-zero ``pad_values`` (``conv.pad_steps``) is built
here too: that value as its ``pad_code``, a code of the quantized input's type."""

from __future__ import annotations

from collections.abc import Iterator

import keras
from keras import ops

from ...graph import zeropad1d_node
from ..items import FreezeError, Layer, Step, where
from . import zero_padding
from ._padding import explicit_padding

LABEL = "ZeroPadding1D"
KIND = "zeropad1d"


def lower(source: Layer) -> Iterator:
    """A zeropad1d step (passes/check_on_grid refuses it where float ops are pending)."""
    layer = source.layer
    if len(layer.input.shape) != 3 or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where(layer)} needs a fixed (L, C) input shape; give the model a fixed input shape")
    yield Step(layer.name, KIND, layer, sources=[layer.name])


def keras_eval(step: Step, x):
    """The padding as Keras computes it (a convolution's: as the layer pads its quantized input)."""
    if isinstance(step.layer, keras.layers.ZeroPadding1D):
        return ops.pad(x, ((0, 0), tuple(step.layer.padding), (0, 0)))
    return zero_padding.keras_eval(step, x)


def node(step: Step, freezing):
    """The zeropad1d node reading its source."""
    layer, src = step.layer, freezing.source(step)
    if isinstance(layer, keras.layers.ZeroPadding1D):
        return zeropad1d_node(step.name, src, tuple(layer.padding), source=",".join(step.sources))
    padding, pad_code = explicit_padding(layer, src)
    return zeropad1d_node(step.name, src, padding[0], pad_code, ",".join(step.sources))
