"""``keras_logits``: a Keras model without its trailing softmax, what a graph frozen with
``strip_softmax=True`` computes; ``with_output_quantizer``: those logits through a quantizer,
what a graph frozen with ``output_quantizer=`` computes; ``keras_reference``: the Keras model a
graph computes, from the user's model and the graph's record of how it was frozen."""

from __future__ import annotations

import keras

from ..training.layers import QuantActivation, QuantDense
from .chain import layer_chain, model_jit, trailing_softmax

# the name of the QuantActivation that ``output_quantizer=`` appends to the model's logits
OUTPUT_QUANTIZER = "output_quantizer"


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


def with_output_quantizer(model, quantizer):
    """``model``'s logits (:func:`keras_logits`) through a ``QuantActivation(quantizer)`` named
    :data:`OUTPUT_QUANTIZER`: a Keras model sharing ``model``'s layers, compiled the same way."""
    logits = keras_logits(model)
    out = QuantActivation(quantizer, name=OUTPUT_QUANTIZER)(logits.outputs[0])
    quantized = keras.Model(model.inputs, out, name=model.name)
    quantized.compile(jit_compile=model_jit(model))
    return quantized


def keras_reference(model, meta: dict) -> tuple:
    """(the Keras model a graph of ``meta`` computes, whether a softmax is still to strip from
    it): ``model`` itself, its calibrated twin when freeze calibrated float layers or tensors
    (``meta["calibration"]``), and with an ``output_quantizer`` recorded the logits through that
    quantizer."""
    stripped = bool(meta.get("stripped_softmax"))
    calibration = meta.get("calibration")
    if calibration and (calibration.get("layers") or calibration.get("tensors")):
        from .calibrate import twin

        model = twin(model, calibration["layers"], calibration.get("tensors"))
    quantizer = meta.get("output_quantizer")
    if quantizer is None:
        return model, stripped
    return with_output_quantizer(model, quantizer), False
