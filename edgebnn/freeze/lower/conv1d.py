"""``QuantConv1D``: an exact conv1d node (explicit padding amounts with TensorFlow's "same"
split or Keras's "causal" left padding, ``pad_values`` as a code of the quantized input's type,
strides). A ``dilation_rate`` d becomes the kernel of ``(k - 1) * d + 1`` taps with zero weights
between the taps Keras reads: the same sum exactly, which hls4ml's Conv1D (no dilation) computes."""

from __future__ import annotations

from collections.abc import Iterator

from ...graph import conv1d_node
from ...graph.ops._weighted import dilated
from ..items import Layer, Step
from . import conv, weighted
from .conv import keras_eval  # noqa: F401 - the kind's Keras evaluation

LABEL = "QuantConv1D"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "conv1d"


def lower(source: Layer) -> Iterator:
    """Its input quantizer, the conv1d accumulator, a float bias and its activation."""
    conv.check(source.layer, "(L, C)", dilation=True)
    yield from weighted.lower(source, KIND)


def node(step: Step, freezing):
    """The conv1d node reading its source."""
    layer, src = step.layer, freezing.source(step)
    w_type, w_codes, bias, bias_type = weighted.weights(layer)
    padding = conv.padding(layer, src.shape[:1])
    pad_code = conv.pad_code(layer, src, padding)
    weight = dilated(w_codes, layer.dilation_rate)
    return conv1d_node(
        step.name, src, weight, w_type, tuple(layer.strides), padding[0], pad_code, bias, bias_type, source=",".join(step.sources)
    )
