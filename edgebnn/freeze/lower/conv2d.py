"""``QuantConv2D``: an exact conv2d node (explicit padding amounts with TensorFlow's "same"
split, strides). "same" padding with non-zero ``pad_values`` becomes a pad2d node of that value
(a code of the quantized input's type, see ``zero_padding``) before a conv2d node without
padding, as the layer itself computes it (it pads explicitly and convolves "valid") and as
hls4ml can export it (its convolutions pad with zeros only). A ``dilation_rate`` becomes the
dilated kernel (``graph.ops._weighted.dilated``: the taps that far apart, zero weights between
them): hls4ml 1.3.0's convolutions do not dilate, so the node holds the kernel the hardware
multiplies and the emulator, export and cost model read that one kernel."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import conv2d_node
from ...graph.ops._weighted import dilated
from ..items import Layer, Step
from . import conv, weighted, zero_padding

LABEL = "QuantConv2D"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "conv2d"


def check(layer) -> None:
    """Refuse the options the conv2d node does not have (shared by the depthwise layers)."""
    conv.check(layer, "(H, W, C)", dilation=True)


def explicit_padding(layer, src) -> tuple:
    """(padding [[top, bottom], [left, right]], pad code) of the 2-D convolution ``layer`` on the
    node ``src`` (shared by the depthwise layers and the pad2d step)."""
    padding = conv.padding(layer, src.shape[:2])
    return padding, conv.pad_code(layer, src, padding)


def pads_value(layer) -> bool:
    """The layer pads with a non-zero ``pad_values`` somewhere: a pad2d step comes before it."""
    padding = conv.padding(layer, tuple(int(d) for d in layer.input.shape[1:3]))
    return float(layer.pad_values) != 0.0 and any(a for pair in padding for a in pair)


def lower(source: Layer) -> Iterator:
    """Its input quantizer, (a pad2d step of its ``pad_values``,) the conv2d accumulator, a float
    bias and its activation."""
    check(source.layer)
    for item in weighted.lower(source, KIND):
        if isinstance(item, Step) and item.kind == KIND and pads_value(source.layer):
            yield Step(f"{source.layer.name}_pad", zero_padding.KIND, source.layer, sources=[source.layer.name])
        yield item


def keras_eval(step: Step, x):
    """The accumulator as Keras computes it (after the pad2d step: "valid", with the layer's cut
    of a single window)."""
    layer = step.layer
    if not pads_value(layer):
        return conv.keras_eval(step, x)
    strides = list(layer.strides)
    for axis in (1, 2):
        k = (layer.kernel_size[axis - 1] - 1) * layer.dilation_rate[axis - 1] + 1
        s = strides[axis - 1]
        if s > 1 and (x.shape[axis] - k) // s + 1 == 1:
            x = ops.take(x, list(range(k)), axis=axis)
            strides[axis - 1] = 1
    x = ops.conv(
        x,
        weighted.deployed_kernel(layer),
        strides=strides,
        padding="valid",
        dilation_rate=layer.dilation_rate,
        data_format=layer.data_format,
    )
    return weighted.add_quantized_bias(layer, x)


def node(step: Step, freezing):
    """The conv2d node reading its source (its kernel dilated by the layer's dilation_rate)."""
    layer, src = step.layer, freezing.source(step)
    w_type, w_codes, bias, bias_type = weighted.weights(layer)
    padding, pad_code = (((0, 0), (0, 0)), 0) if pads_value(layer) else explicit_padding(layer, src)
    w_codes = dilated(w_codes, layer.dilation_rate)
    return conv2d_node(
        step.name, src, w_codes, w_type, tuple(layer.strides), padding, pad_code, bias, bias_type, source=",".join(step.sources)
    )
