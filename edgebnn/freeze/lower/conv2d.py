"""``QuantConv2D``: an exact conv2d node (explicit padding amounts with TensorFlow's "same"
split, strides). "same" padding with non-zero ``pad_values`` becomes a pad2d node of that value
(a code of the quantized input's type, see ``zero_padding``) before a conv2d node without
padding, as the layer itself computes it (it pads explicitly and convolves "valid") and as
hls4ml can export it (its convolutions pad with zeros only)."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import conv2d_node
from ...layers import _conv_input, _same_padding
from ..items import FreezeError, Layer, Step, where
from . import weighted, zero_padding

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


def same_padding(layer, shape) -> tuple[tuple[int, int], tuple[int, int]]:
    """The explicit padding amounts of the layer on an (H, W, C) input ``shape``."""
    if layer.padding != "same":
        return ((0, 0), (0, 0))
    (kh, kw), (sh, sw) = layer.kernel_size, layer.strides
    return (_same_padding(int(shape[0]), kh, sh, 1), _same_padding(int(shape[1]), kw, sw, 1))


def pads_value(layer) -> bool:
    """The layer pads with a non-zero ``pad_values`` somewhere: a pad2d step comes before it."""
    padding = same_padding(layer, layer.input.shape[1:])
    return float(layer.pad_values) != 0.0 and any(a for pair in padding for a in pair)


def lower(source: Layer) -> Iterator:
    """Its input quantizer, (a pad2d step of its ``pad_values``,) the conv2d accumulator, a float
    bias and its activation."""
    check(source.layer)
    for item in weighted.lower(source, KIND):
        if isinstance(item, Step) and pads_value(source.layer):
            yield Step(f"{source.layer.name}_pad", zero_padding.KIND, source.layer, sources=[source.layer.name])
        yield item


def keras_eval(step: Step, x):
    """The accumulator as Keras computes it."""
    layer = step.layer
    if pads_value(layer):  # padded by the pad2d step: "valid", with the layer's cut of a single window
        padding, strides = "valid", list(layer.strides)
        for axis in (1, 2):
            k, s = layer.kernel_size[axis - 1], strides[axis - 1]
            if s > 1 and (x.shape[axis] - k) // s + 1 == 1:
                x = ops.take(x, list(range(k)), axis=axis)
                strides[axis - 1] = 1
    else:
        x, padding, strides = _conv_input(layer, x)  # the layer's own padding of its quantized input
    x = ops.conv(
        x,
        layer.quantized_kernel(),
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
    sh, sw = layer.strides
    padding = ((0, 0), (0, 0)) if pads_value(layer) else same_padding(layer, src.shape)
    return conv2d_node(step.name, src, w_codes, w_type, (sh, sw), padding, 0, bias, bias_type, source=",".join(step.sources))
