"""``QuantConv2D``: an exact conv2d node (explicit padding amounts with TensorFlow's "same"
split, ``pad_values`` as a code of the quantized input's type, strides)."""

from __future__ import annotations

from collections.abc import Iterator

from ...graph import conv2d_node
from ..items import Layer, Step
from . import conv, weighted
from .conv import keras_eval  # noqa: F401 - the kind's Keras evaluation

LABEL = "QuantConv2D"
STARTS = True  # its input_quantizer may set the model's input type
KIND = "conv2d"


def check(layer) -> None:
    """Refuse the options the conv2d node does not have."""
    conv.check(layer, "(H, W, C)")


def lower(source: Layer) -> Iterator:
    """Its input quantizer, the conv2d accumulator, a float bias and its activation."""
    check(source.layer)
    yield from weighted.lower(source, KIND)


def node(step: Step, freezing):
    """The conv2d node reading the last node."""
    layer, src = step.layer, freezing.nodes[-1]
    w_type, w_codes, bias, bias_type = weighted.weights(layer)
    padding = conv.padding(layer, src.shape[:2])
    pad_code = conv.pad_code(layer, src, padding)
    return conv2d_node(
        step.name, src, w_codes, w_type, tuple(layer.strides), padding, pad_code, bias, bias_type, source=",".join(step.sources)
    )
