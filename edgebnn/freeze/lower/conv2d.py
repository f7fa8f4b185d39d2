"""``QuantConv2D``: an exact conv2d node (explicit padding amounts with TensorFlow's "same"
split, ``pad_values`` as a code of the quantized input's type, strides)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from keras import ops

from ...graph import conv2d_node
from ...layers import _conv_input, _same_padding
from ..items import FreezeError, Layer, Step, where
from . import weighted

LABEL = "QuantConv2D"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "conv2d"


def check(layer) -> None:
    """Refuse the options the conv2d node does not have."""
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where(layer)} uses data_format={layer.data_format!r}; only channels_last is supported")
    if tuple(layer.dilation_rate) != (1, 1):
        raise FreezeError(f"{where(layer)} has dilation_rate={tuple(layer.dilation_rate)}; only dilation 1 can be frozen")
    if getattr(layer, "groups", 1) != 1:
        raise FreezeError(f"{where(layer)} has groups={layer.groups}; only groups=1 can be frozen")
    if layer.padding not in ("valid", "same"):
        raise FreezeError(f"{where(layer)} has padding={layer.padding!r}; use 'valid' or 'same'")
    if len(layer.input.shape) != 4 or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where(layer)} needs a fixed (H, W, C) input shape; give the model a fixed input shape")


def lower(source: Layer) -> Iterator:
    """Its input quantizer, the conv2d accumulator, a float bias and its activation."""
    check(source.layer)
    yield from weighted.lower(source, KIND)


def keras_eval(step: Step, x):
    """The accumulator as Keras computes it."""
    layer = step.layer
    x, padding, strides = _conv_input(layer, x)  # the layer's own padding of its quantized input
    x = ops.conv(
        x,
        weighted.deployed_kernel(layer),
        strides=strides,
        padding=padding,
        dilation_rate=layer.dilation_rate,
        data_format=layer.data_format,
    )
    return weighted.add_quantized_bias(layer, x)


def node(step: Step, freezing):
    """The conv2d node reading the last node."""
    layer, src = step.layer, freezing.nodes[-1]
    w_type, w_codes, bias, bias_type = weighted.weights(layer)
    kh, kw = layer.kernel_size
    sh, sw = layer.strides
    padding = ((0, 0), (0, 0))
    if layer.padding == "same":
        padding = (_same_padding(src.shape[0], kh, sh, 1), _same_padding(src.shape[1], kw, sw, 1))
    pad_code = 0
    if any(a for pair in padding for a in pair):
        pad = float(layer.pad_values)
        if not src.type.contains(np.array([pad])):
            raise FreezeError(
                f"{where(layer)} pads with pad_values={pad}, which is not on the grid of its quantized input "
                f"{src.type}; pad with a value the input quantizer can produce (e.g. 1.0 or -1.0 after a sign)"
            )
        pad_code = int(src.type.codes(np.array([pad]))[0])
    return conv2d_node(
        step.name, src, w_codes, w_type, (sh, sw), padding, pad_code, bias, bias_type, source=",".join(step.sources)
    )
