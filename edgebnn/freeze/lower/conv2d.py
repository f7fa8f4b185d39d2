"""``QuantConv2D``: an exact conv2d node (explicit padding amounts with TensorFlow's "same"
split, strides). "same" padding with non-zero ``pad_values`` becomes a pad2d node of that value
(a code of the quantized input's type, see ``zero_padding``) before a conv2d node without
padding, as the layer itself computes it (it pads explicitly and convolves "valid") and as
hls4ml can export it (its convolutions pad with zeros only); ``conv`` holds that logic, shared
with ``QuantConv1D`` and the depthwise layers. A ``dilation_rate`` becomes the dilated kernel
(``graph.ops._weighted.dilated``: the taps that far apart, zero weights between them): hls4ml
1.3.0's convolutions do not dilate, so the node holds the kernel the hardware multiplies and the
emulator, export and cost model read that one kernel."""

from __future__ import annotations

from collections.abc import Iterator

from ...graph import conv2d_node
from ...graph.ops._weighted import dilated
from ..items import Layer, Step
from . import conv, weighted
from .conv import keras_eval  # noqa: F401 - the kind's Keras evaluation (after the pad2d step: "valid")

LABEL = "QuantConv2D"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "conv2d"


def check(layer) -> None:
    """Refuse the options the conv2d node does not have (shared by the depthwise layers)."""
    conv.check(layer, "(H, W, C)", dilation=True)


def lower(source: Layer) -> Iterator:
    """Its input quantizer, (a pad2d step of its ``pad_values``,) the conv2d accumulator, a float
    bias and its activation."""
    layer = source.layer
    check(layer)
    yield from weighted.lower(source, KIND, steps=[*conv.pad_steps(layer), Step(layer.name, KIND, layer, sources=[layer.name])])


def node(step: Step, freezing):
    """The conv2d node reading its source (its kernel dilated by the layer's dilation_rate)."""
    layer, src = step.layer, freezing.source(step)
    w_type, w_codes, bias, bias_type = weighted.weights(layer)
    padding, pad_code = conv.node_padding(layer, src)
    w_codes = dilated(w_codes, layer.dilation_rate)
    return conv2d_node(
        step.name, src, w_codes, w_type, tuple(layer.strides), padding, pad_code, bias, bias_type, source=",".join(step.sources)
    )
