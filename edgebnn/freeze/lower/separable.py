"""``QuantSeparableConv2D``: a depthwise_conv2d node (its depthwise half, ``lower/depthwise.py``,
named ``<layer>_depthwise``, after a pad2d step of a non-zero ``pad_values`` with "same" padding,
as for ``QuantDepthwiseConv2D``) and a 1x1 conv2d node reading that accumulator directly (its
pointwise kernel on its quantizer's grid, the quantized bias), both exact. Scaled kernels enter
as their codes (:func:`~edgebnn.freeze.forms.kernel`): the layer applies the pointwise scale and
a depthwise scale of one value after the pointwise sum; a per-channel depthwise scale is shifted
into the depthwise codes when it is a power of two, and refused otherwise.

Keras computes both halves in float32 (TensorFlow's ``separable_conv2d``: the depthwise result,
then a 1x1 convolution of it); they agree with the graph while every intermediate stays within
float32's 24 significant bits, which freeze's float32 check covers for both nodes."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import conv2d_node
from ..items import Layer, Step
from . import conv, conv2d, depthwise, weighted

LABEL = "QuantSeparableConv2D"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "pointwise"


def lower(source: Layer) -> Iterator:
    """Its input quantizer, (a pad2d step of its ``pad_values``,) the depthwise accumulator, the
    pointwise accumulator, a float bias and its activation."""
    layer = source.layer
    conv2d.check(layer)
    steps = [
        *conv.pad_steps(layer),
        Step(f"{layer.name}_depthwise", depthwise.KIND, layer, sources=[layer.name]),
        Step(layer.name, KIND, layer, sources=[layer.name]),
    ]
    yield from weighted.lower(source, KIND, kernels=("depthwise_quantizer", "pointwise_quantizer"), steps=steps)


def keras_eval(step: Step, x):
    """The pointwise accumulator as Keras computes it from the depthwise result."""
    layer = step.layer
    kernel = weighted.deployed_kernel(layer, "pointwise_quantizer")
    pointwise = lambda v: ops.conv(v, ops.cast(kernel, v.dtype), strides=1, padding="valid", data_format=layer.data_format)
    return weighted.add_quantized_bias(layer, weighted.summed(layer, pointwise, x))


def node(step: Step, freezing):
    """The 1x1 conv2d node reading the depthwise node."""
    layer = step.layer
    w_type, w_codes, bias, bias_type = weighted.weights(layer, "pointwise_quantizer")
    src = freezing.source(step)
    return conv2d_node(step.name, src, w_codes, w_type, bias=bias, bias_type=bias_type, source=",".join(step.sources))
