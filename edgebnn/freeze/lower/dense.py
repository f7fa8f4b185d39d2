"""``QuantDense``: an exact dense node (integer kernel codes, accumulator type from interval
analysis)."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import dense_node
from ..items import Layer, Step
from . import weighted

LABEL = "QuantDense"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "dense"


def lower(source: Layer) -> Iterator:
    """Its input quantizer, the dense accumulator, a float bias and its activation."""
    yield from weighted.lower(source, KIND)


def keras_eval(step: Step, x):
    """The accumulator as Keras computes it (:func:`weighted.summed`)."""
    layer = step.layer
    kernel = weighted.deployed_kernel(layer)
    return weighted.add_quantized_bias(layer, weighted.summed(layer, lambda v: ops.matmul(v, ops.cast(kernel, v.dtype)), x))


def node(step: Step, freezing):
    """The dense node reading its source."""
    w_type, w_codes, bias, bias_type = weighted.weights(step.layer)
    return dense_node(step.name, freezing.source(step), w_codes, w_type, bias, bias_type, source=",".join(step.sources))
