"""``QuantDepthwiseConv2D``: an exact depthwise_conv2d node (weight codes (kh, kw, C, M), output
channels in Keras's order ``c * M + m``; padding, ``pad_values``, strides and a quantized bias as
for ``QuantConv2D``; a ``dilation_rate`` as the dilated kernel, as for ``QuantConv2D``; a scaled
kernel as its codes, :func:`~edgebnn.freeze.forms.kernel`). Its step kind is also the depthwise
half of a ``QuantSeparableConv2D`` (``lower/separable.py``), which has no bias there."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import depthwise_conv2d_node
from ...graph.ops._weighted import dilated
from ...layers import QuantSeparableConv2D, _conv_input
from ..items import Layer, Step
from . import conv2d, weighted

LABEL = "QuantDepthwiseConv2D"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "depthwise_conv2d"


def lower(source: Layer) -> Iterator:
    """Its input quantizer, the depthwise accumulator, a float bias and its activation."""
    conv2d.check(source.layer)
    yield from weighted.lower(source, KIND, kernels=("depthwise_quantizer",))


def _separable(layer) -> bool:
    return isinstance(layer, QuantSeparableConv2D)


def keras_eval(step: Step, x):
    """The depthwise accumulator as Keras computes it (with the quantized bias of a
    ``QuantDepthwiseConv2D``; a separable layer's bias belongs to its pointwise half)."""
    layer = step.layer
    x, padding, strides = _conv_input(layer, x)  # the layer's own padding of its quantized input
    kernel = weighted.deployed_kernel(layer, "depthwise_quantizer")
    x = ops.depthwise_conv(
        x, kernel, strides=strides, padding=padding, dilation_rate=layer.dilation_rate, data_format=layer.data_format
    )
    return x if _separable(layer) else weighted.add_quantized_bias(layer, x)


def node(step: Step, freezing):
    """The depthwise_conv2d node reading its source (its kernel dilated by the layer's dilation_rate)."""
    layer, src = step.layer, freezing.source(step)
    w_type, w_codes, bias, bias_type = weighted.weights(layer, "depthwise_quantizer", not _separable(layer))
    w_codes = dilated(w_codes, layer.dilation_rate)
    padding, pad_code = conv2d.explicit_padding(layer, src)
    return depthwise_conv2d_node(
        step.name, src, w_codes, w_type, layer.strides, padding, pad_code, bias, bias_type, source=",".join(step.sources)
    )
