"""The model's input: the first layer's ``input_quantizer`` (passes/input_quantizer makes the step)."""

from __future__ import annotations

from ...graph import input_node
from .. import forms
from ..items import Step

KIND = "input"


def keras_eval(step: Step, x):
    """The quantized input as Keras computes it."""
    return step.quantizer(x, training=False)


def node(step: Step, freezing):
    """The input node of the model's input shape and the quantizer's type."""
    return input_node("input", freezing.input_shape, forms.output_type(step.quantizer), ",".join(step.sources))
