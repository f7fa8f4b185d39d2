"""``keras_logits``: a Keras model without its trailing softmax, what a graph frozen with
``strip_softmax=True`` computes."""

from __future__ import annotations

import keras

from ..layers import QuantDense
from .chain import layer_chain, model_jit, trailing_softmax


def keras_logits(model):
    """``model`` without the softmax that ends it: what a graph frozen with ``strip_softmax=True``
    computes, as a Keras model sharing ``model``'s layers and compiled the same way (XLA or not).
    A model that does not end with a softmax is returned as it is."""
    layers = layer_chain(model)
    i = trailing_softmax(layers)
    if i is None:
        return model
    layer = layers[i]
    out = _WithoutActivation(layer)(layer.input) if isinstance(layer, QuantDense) else layer.input
    logits = keras.Model(model.inputs, out, name=f"{model.name}_logits")
    logits.compile(jit_compile=model_jit(model))
    return logits


class _WithoutActivation(keras.layers.Layer):
    """Calls a layer with its activation left out (read when the call is traced)."""

    def __init__(self, layer, **kwargs):
        super().__init__(**kwargs)
        self.inner = layer

    def call(self, x):
        activation = self.inner.activation
        self.inner.activation = keras.activations.linear
        try:
            return self.inner(x, training=False)
        finally:
            self.inner.activation = activation
