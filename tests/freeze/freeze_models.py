"""Tiny Keras models and item streams for the tests of freeze's passes and handlers."""

import keras
import numpy as np

import edgebnn  # noqa: F401
from edgebnn.freeze.items import FloatOp, Freezing, Layer, Planning, Quantize, Step
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense

IN_Q = "quantized_bits(4, 0, keep_negative=False)"


def dense_model(*after, units=3, n_in=4, **dense):
    """Input -> QuantDense -> the layers ``after``."""
    dense.setdefault("use_bias", False)
    return keras.Sequential(
        [keras.Input((n_in,)), QuantDense(units, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="d", **dense), *after]
    )


def conv_model(*after, filters=2, **conv):
    """Input (6, 6, 1) -> QuantConv2D 3x3 -> the layers ``after``."""
    conv.setdefault("use_bias", False)
    return keras.Sequential(
        [
            keras.Input((6, 6, 1)),
            QuantConv2D(filters, 3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="c", **conv),
            *after,
        ]
    )


def layers_of(model):
    return [Layer(layer) for layer in model.layers]


def run(pass_run, items, **planning):
    """The items a plan pass yields, and the planning record it filled."""
    planning = Planning(**planning)
    return list(pass_run(iter(items), planning)), planning


def op(name="bn", relu=False, per_channel=False, bias=False):
    """A float op of a stand-in layer called ``name``."""
    layer = keras.layers.Activation("relu" if relu else "linear", name=name)
    return FloatOp(name, lambda x: x, relu=relu, layer=layer, per_channel=per_channel, bias=bias)


def quantize(quantizer="ste_sign", name="q"):
    layer = QuantActivation(quantizer, name=name)
    return Quantize(layer, layer.quantizer, "quantizer", name)


def step(kind, name=None):
    return Step(name or kind, kind, keras.layers.Layer(name=name or kind))


def frozen_until(model, stop: str):
    """(steps, freezing) with the nodes of every step before the one named ``stop`` built."""
    from edgebnn.freeze import plan
    from edgebnn.freeze.passes import build_node

    steps = plan(model)
    freezing = Freezing(model, False, tuple(int(d) for d in model.inputs[0].shape[1:]))
    for s in steps:
        if s.name == stop:
            break
        build_node.run(s, freezing)
    return {s.name: s for s in steps}, freezing


def grid_inputs(n, rng, shape):
    return (rng.integers(0, 16, size=(n, *shape)) / 16).astype(np.float32)
