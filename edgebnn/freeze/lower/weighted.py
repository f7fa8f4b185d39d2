"""What the weighted layers (``QuantDense``, ``QuantConv2D``, ``QuantDepthwiseConv2D``,
``QuantSeparableConv2D``) share: their lowering into an input quantizer, accumulator steps, a
float bias and an activation; their quantized bias in Keras; their integer weights and bias for
the node."""

from __future__ import annotations

from collections.abc import Iterator

import keras
from keras import ops

from .. import forms
from ..items import FloatOp, FreezeError, Layer, Quantize, Step, where
from . import activation


def lower(source: Layer, kind: str, kernels=("kernel_quantizer",), steps=None) -> Iterator:
    """The items of a weighted layer whose accumulator step is of ``kind`` (or whose ``steps``
    are these, in order), each of its ``kernels`` (quantizer attributes) quantized."""
    layer = source.layer
    # its input quantizer (None when it has none) comes first: it ends the float ops before
    yield Quantize(layer, layer.input_quantizer, "input_quantizer", f"{layer.name}_input")
    for which in kernels:
        if getattr(layer, which) is None:
            raise FreezeError(f"{where(layer)} has a float kernel; give it a {which} such as 'ste_sign'")
    yield from steps or [Step(layer.name, kind, layer, sources=[layer.name])]
    if layer.use_bias and layer.bias_quantizer is None:  # a float bias: folded downstream
        yield FloatOp(f"{layer.name}.bias", lambda x, l=layer: ops.add(x, l.bias), bias=True, layer=layer, per_channel=True)
    if layer.activation is not None and layer.activation is not keras.activations.linear and not source.logits:
        yield activation.float_op(layer, f"{layer.name}.activation", layer.activation, layer.activation)


def add_quantized_bias(layer, x):
    """The accumulator includes a quantized bias (a float one is folded into the requant)."""
    if layer.use_bias and layer.bias_quantizer is not None:
        x = ops.add(x, layer.quantized_bias())
    return x


def weights(layer, which: str = "kernel_quantizer", kernel=None, with_bias: bool = True):
    """(kernel type, kernel codes, bias codes or None, bias type or None) of the layer: the
    kernel ``kernel`` (default its ``quantized_kernel()``) on the grid of its quantizer
    ``which``, and its quantized bias unless ``with_bias`` is False."""
    kernel = layer.quantized_kernel() if kernel is None else kernel
    w_type, w_codes = forms.on_declared_grid(layer, which, kernel)
    bias = bias_type = None
    if with_bias and layer.use_bias and layer.bias_quantizer is not None:
        bias_type, bias = forms.on_declared_grid(layer, "bias_quantizer", layer.quantized_bias())
    return w_type, w_codes, bias, bias_type
