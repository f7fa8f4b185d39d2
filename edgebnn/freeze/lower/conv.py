"""What ``QuantConv1D``, ``QuantConv2D`` and the depthwise layers share: the refusal of options
their nodes do not have, the accumulator as Keras computes it, the explicit padding amounts
(TensorFlow's "same" split, Keras's "causal" left padding) and ``pad_values`` as a code of the
quantized input's type.

"same" padding with a non-zero ``pad_values`` (:func:`pads_value`) is a padding step of that
value (:func:`pad_steps`: pad2d, or zeropad1d with its ``pad_code`` for a 1-D layer) before an
accumulator without padding, as the layer itself computes it (it pads explicitly and convolves
"valid", :func:`conv_input`) and as hls4ml can export it (its convolutions pad with zeros only)."""

from __future__ import annotations

from keras import ops

from ...training.layers import _conv_input
from ..items import FreezeError, Step, where
from . import weighted, zero_padding, zeropad1d
from ._padding import explicit_padding, pads_value


def check(layer, shape_name: str, dilation: bool = False) -> None:
    """Refuse what the conv nodes do not have; ``shape_name`` names the input shape ("(H, W, C)"),
    ``dilation`` allows a ``dilation_rate`` above 1 (written as zero taps in the kernel)."""
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where(layer)} uses data_format={layer.data_format!r}; only channels_last is supported")
    if not dilation and any(d != 1 for d in layer.dilation_rate):
        raise FreezeError(f"{where(layer)} has dilation_rate={tuple(layer.dilation_rate)}; only dilation 1 can be frozen")
    if getattr(layer, "groups", 1) != 1:
        raise FreezeError(f"{where(layer)} has groups={layer.groups}; only groups=1 can be frozen")
    allowed = ("valid", "same", "causal") if len(layer.kernel_size) == 1 else ("valid", "same")
    if layer.padding not in allowed:
        raise FreezeError(f"{where(layer)} has padding={layer.padding!r}; use 'valid' or 'same'")
    rank = len(layer.kernel_size) + 2
    if len(layer.input.shape) != rank or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where(layer)} needs a fixed {shape_name} input shape; give the model a fixed input shape")


def pad_steps(layer) -> list[Step]:
    """The padding step of the layer's ``pad_values`` before its accumulator (none when it pads with zeros)."""
    if not pads_value(layer):
        return []
    kind = zeropad1d.KIND if len(layer.kernel_size) == 1 else zero_padding.KIND
    return [Step(f"{layer.name}_pad", kind, layer, sources=[layer.name])]


def node_padding(layer, src) -> tuple:
    """(padding, pad code) of the accumulator node: none after a padding step, else :func:`explicit_padding`."""
    if pads_value(layer):
        return tuple((0, 0) for _ in layer.kernel_size), 0
    return explicit_padding(layer, src)


def conv_input(layer, x):
    """``(x, padding, strides)`` for the convolution of ``x`` as the layer computes it: after its
    padding step (:func:`pads_value`) ``x`` is padded already, convolved "valid" with the layer's
    cut of a single window (``layers._conv_input``); otherwise the layer's own input."""
    if not pads_value(layer):
        return _conv_input(layer, x)  # the layer's own padding of its quantized input
    strides = list(layer.strides)
    for axis in range(1, len(strides) + 1):
        k = (layer.kernel_size[axis - 1] - 1) * layer.dilation_rate[axis - 1] + 1
        s = strides[axis - 1]
        if s > 1 and (x.shape[axis] - k) // s + 1 == 1:
            x = ops.take(x, list(range(k)), axis=axis)
            strides[axis - 1] = 1
    return x, "valid", tuple(strides)


def keras_eval(step: Step, x):
    """The accumulator as Keras computes it (:func:`conv_input`, :func:`weighted.summed`)."""
    layer = step.layer
    x, padding, strides = conv_input(layer, x)
    kernel = weighted.deployed_kernel(layer)
    options = {"strides": strides, "padding": padding, "dilation_rate": layer.dilation_rate, "data_format": layer.data_format}
    x = weighted.summed(layer, lambda v: ops.conv(v, ops.cast(kernel, v.dtype), **options), x)
    return weighted.add_quantized_bias(layer, x)
