"""``QuantDepthwiseConv2D``: an exact depthwise_conv2d node (weight codes (kh, kw, C, M), output
channels in Keras's order ``c * M + m``; padding, strides and a quantized bias as for
``QuantConv2D``; "same" padding with a non-zero ``pad_values`` as a pad2d step of that value
before a depthwise_conv2d node without padding, as for ``QuantConv2D`` (``conv.pad_steps``); a
``dilation_rate`` as the dilated kernel, as for ``QuantConv2D``; a scaled kernel as its codes,
:func:`~edgebnn.freeze.forms.kernel`). Its step kind is also the depthwise half of a
``QuantSeparableConv2D`` (``lower/separable.py``), which has no bias there."""

from __future__ import annotations

from collections.abc import Iterator

from ...graph import depthwise_conv2d_node
from ...graph.ops._weighted import dilated
from ...training.layers import QuantSeparableConv2D, _depthwise
from ..items import Layer, Step
from . import conv, conv2d, weighted

LABEL = "QuantDepthwiseConv2D"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "depthwise_conv2d"


def lower(source: Layer) -> Iterator:
    """Its input quantizer, (a pad2d step of its ``pad_values``,) the depthwise accumulator, a
    float bias and its activation."""
    layer = source.layer
    conv2d.check(layer)
    steps = [*conv.pad_steps(layer), Step(layer.name, KIND, layer, sources=[layer.name])]
    yield from weighted.lower(source, KIND, kernels=("depthwise_quantizer",), steps=steps)


def _separable(layer) -> bool:
    return isinstance(layer, QuantSeparableConv2D)


def keras_eval(step: Step, x):
    """The depthwise accumulator as Keras computes it (with the quantized bias of a
    ``QuantDepthwiseConv2D``; a separable layer's bias belongs to its pointwise half; after a
    pad2d step "valid", ``conv.conv_input``)."""
    layer = step.layer
    x, padding, strides = conv.conv_input(layer, x)
    kernel = weighted.deployed_kernel(layer, "depthwise_quantizer")
    options = {"strides": strides, "padding": padding, "dilation_rate": layer.dilation_rate, "data_format": layer.data_format}
    x = weighted.summed(layer, lambda v: _depthwise(v, kernel, options), x, rounded=not _separable(layer))
    return x if _separable(layer) else weighted.add_quantized_bias(layer, x)


def node(step: Step, freezing):
    """The depthwise_conv2d node reading its source (its kernel dilated by the layer's dilation_rate)."""
    layer, src = step.layer, freezing.source(step)
    w_type, w_codes, bias, bias_type = weighted.weights(layer, "depthwise_quantizer", not _separable(layer))
    w_codes = dilated(w_codes, layer.dilation_rate)
    padding, pad_code = conv.node_padding(layer, src)
    return depthwise_conv2d_node(
        step.name, src, w_codes, w_type, layer.strides, padding, pad_code, bias, bias_type, source=",".join(step.sources)
    )
