"""``QuantConv1D``: an exact conv1d node (explicit padding amounts with TensorFlow's "same"
split or Keras's "causal" left padding, strides). "same" padding with non-zero ``pad_values``
becomes a zeropad1d node of that value (its ``pad_code``, a code of the quantized input's type,
see ``zeropad1d``) before a conv1d node without padding, as for ``QuantConv2D`` (``conv``);
"causal" padding pads zeros. A ``dilation_rate`` d becomes the kernel of ``(k - 1) * d + 1``
taps with zero weights between the taps Keras reads: the same sum exactly, which hls4ml's Conv1D
(no dilation) computes."""

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
    """Its input quantizer, (a zeropad1d step of its ``pad_values``,) the conv1d accumulator, a
    float bias and its activation."""
    layer = source.layer
    conv.check(layer, "(L, C)", dilation=True)
    yield from weighted.lower(source, KIND, steps=[*conv.pad_steps(layer), Step(layer.name, KIND, layer, sources=[layer.name])])


def node(step: Step, freezing):
    """The conv1d node reading its source."""
    layer, src = step.layer, freezing.source(step)
    w_type, w_codes, bias, bias_type = weighted.weights(layer)
    padding, pad_code = conv.node_padding(layer, src)
    weight = dilated(w_codes, layer.dilation_rate)
    return conv1d_node(
        step.name, src, weight, w_type, tuple(layer.strides), padding[0], pad_code, bias, bias_type, source=",".join(step.sources)
    )
