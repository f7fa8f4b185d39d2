"""What the weighted layers (``QuantDense``, ``QuantConv2D``, ``QuantDepthwiseConv2D``,
``QuantSeparableConv2D``) share: their lowering into an input quantizer, accumulator steps, a
float bias and an activation; their quantized bias in Keras; their integer weights and bias for
the node."""

from __future__ import annotations

from collections.abc import Iterator

import keras
from keras import ops

from ...training.layers import add_bias, sums_exactly
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
    if forms.folds_scale(layer):  # the accumulator holds codes: its scales are float ops
        yield forms.scale_op(layer)
    # a quantized bias is added after the scales, or after the rounding of an exact sum
    if layer.use_bias and layer.bias_quantizer is not None and not _bias_in_accumulator(layer):
        add = lambda x, l=layer: add_bias(x, l.quantized_bias())
        yield FloatOp(f"{layer.name}.bias", add, bias=True, layer=layer, per_channel=True)
    if layer.use_bias and layer.bias_quantizer is None:  # a float bias: folded downstream
        add = lambda x, l=layer: add_bias(x, float_bias(l))
        yield FloatOp(f"{layer.name}.bias", add, bias=True, layer=layer, per_channel=True)
    if layer.activation is not None and layer.activation is not keras.activations.linear and not source.logits:
        yield activation.float_op(layer, f"{layer.name}.activation", layer.activation, layer.activation)
    quantizer = getattr(layer, "activation_quantizer", None)  # QKeras's activation="quantized_relu(4)"
    if quantizer is not None:
        yield Quantize(layer, quantizer, "activation_quantizer", f"{layer.name}_activation")


def float_bias(layer):
    """The float bias the layer adds at inference: its ``bias``, or a folded BatchNorm's
    (QKeras's ``QDenseBatchnorm``, ``QConv2DBatchnorm``: ``layers._FoldedBatchnorm.folded_bias``)."""
    return layer.folded_bias() if hasattr(layer, "folded_bias") else layer.bias


def _bias_in_accumulator(layer) -> bool:
    """A quantized bias adds to the accumulator (a float one, or one after a scale op, is folded
    into the requant)."""
    return layer.use_bias and layer.bias_quantizer is not None and not (forms.folds_scale(layer) or sums_exactly(layer))


def add_quantized_bias(layer, x):
    """The accumulator includes a quantized bias (a float one is folded into the requant)."""
    if _bias_in_accumulator(layer):
        x = add_bias(x, layer.quantized_bias())
    return x


def summed(layer, product, x, rounded: bool = True):
    """``product(x)`` as the layer sums at inference: for a layer that sums exactly
    (``layers.sums_exactly``: float32 scales along the sum) in float64, rounded once to float32
    (``rounded=False``: left in float64, a separable layer's depthwise result, which its
    pointwise sum reads unrounded), else in ``x``'s type. ``product`` casts its kernel to its
    input's type."""
    if not sums_exactly(layer):
        return product(x)
    out = product(ops.cast(x, "float64"))
    return ops.cast(out, "float32") if rounded else out


def deployed_kernel(layer, which: str = "kernel_quantizer"):
    """The kernel that the quantizer attribute ``which`` reads, as the accumulator multiplies it
    (a Keras tensor): the quantized kernel, or a scaled kernel's codes (times its power-of-two
    scale when that is shifted into the codes, :func:`forms.codes_after_sum`)."""
    values, scale = layer.split_weight(which)
    if scale is None or forms.codes_after_sum(layer, which):
        return values
    return getattr(layer, which).rescale(values, scale)


def weights(layer, which: str = "kernel_quantizer", with_bias: bool = True):
    """(kernel type, kernel codes, bias codes or None, bias type or None) of the layer: the
    kernel of its quantizer attribute ``which`` (codes of a scaled one, :func:`forms.kernel`);
    its quantized bias unless ``with_bias`` is False."""
    w_type, w_codes = forms.kernel(layer, which)
    bias = bias_type = None
    if with_bias and _bias_in_accumulator(layer):
        bias_type, bias = forms.on_declared_grid(layer, "bias_quantizer", layer.quantized_bias())
    return w_type, w_codes, bias, bias_type
