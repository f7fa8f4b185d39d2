"""``QuantConv2D``: an exact conv2d node (explicit padding amounts with TensorFlow's "same"
split, ``pad_values`` as a code of the quantized input's type, strides). A ``dilation_rate``
becomes the dilated kernel (``graph.ops._weighted.dilated``: the taps that far apart, zero weights
between them): hls4ml 1.3.0's convolutions do not dilate, so the node holds the kernel the
hardware multiplies and the emulator, export and cost model read that one kernel."""

from __future__ import annotations

from collections.abc import Iterator

from ...graph import conv2d_node
from ...graph.ops._weighted import dilated
from ..items import Layer, Step
from . import conv, weighted
from .conv import keras_eval  # noqa: F401 - the kind's Keras evaluation

LABEL = "QuantConv2D"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "conv2d"


def check(layer) -> None:
    """Refuse the options the conv2d node does not have (shared by the depthwise layers)."""
    conv.check(layer, "(H, W, C)", dilation=True)


def explicit_padding(layer, src) -> tuple:
    """(padding [[top, bottom], [left, right]], pad code) of the 2-D convolution ``layer`` on the
    node ``src`` (shared by the depthwise layers)."""
    padding = conv.padding(layer, src.shape[:2])
    return padding, conv.pad_code(layer, src, padding)


def lower(source: Layer) -> Iterator:
    """Its input quantizer, the conv2d accumulator, a float bias and its activation."""
    check(source.layer)
    yield from weighted.lower(source, KIND)


def node(step: Step, freezing):
    """The conv2d node reading its source (its kernel dilated by the layer's dilation_rate)."""
    layer, src = step.layer, freezing.source(step)
    w_type, w_codes, bias, bias_type = weighted.weights(layer)
    padding, pad_code = explicit_padding(layer, src)
    w_codes = dilated(w_codes, layer.dilation_rate)
    return conv2d_node(
        step.name, src, w_codes, w_type, tuple(layer.strides), padding, pad_code, bias, bias_type, source=",".join(step.sources)
    )
