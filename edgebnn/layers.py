"""Keras 3 layers whose inputs and weights pass through edgebnn quantizers.

The layers keep the user's quantizers exactly as given (no silent substitution) and serialize
every argument, so a saved ``.keras`` model loads back after ``import edgebnn`` alone.
"""

from __future__ import annotations

import keras
from keras import ops

from . import quantizers as q


def _quantizer_arg(value):
    return q.get(value)


@keras.saving.register_keras_serializable(package="edgebnn")
class QuantDense(keras.layers.Dense):
    """``Dense`` with an ``input_quantizer`` on its inputs and a ``kernel_quantizer`` on its
    kernel: ``y = q_in(x) @ q_k(W) + b``. ``bias_quantizer`` is not supported yet; a float
    bias is allowed where a quantizer follows (freeze folds it into thresholds)."""

    def __init__(self, units, input_quantizer=None, kernel_quantizer=None, use_bias=True, **kwargs):
        super().__init__(units, use_bias=use_bias, **kwargs)
        self.input_quantizer = _quantizer_arg(input_quantizer)
        self.kernel_quantizer = _quantizer_arg(kernel_quantizer)

    def quantized_kernel(self):
        k = self.kernel
        return k if self.kernel_quantizer is None else self.kernel_quantizer(k)

    def call(self, inputs, training=None):
        x = inputs if self.input_quantizer is None else self.input_quantizer(inputs, training=training)
        x = ops.matmul(x, self.quantized_kernel())
        if self.bias is not None:
            x = ops.add(x, self.bias)
        if self.activation is not None:
            x = self.activation(x)
        return x

    def get_config(self):
        config = super().get_config()
        config["input_quantizer"] = q.serialize(self.input_quantizer)
        config["kernel_quantizer"] = q.serialize(self.kernel_quantizer)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("input_quantizer", "kernel_quantizer"):
            config[key] = q.get(config.get(key))
        return super().from_config(config)


@keras.saving.register_keras_serializable(package="edgebnn")
class QuantActivation(keras.layers.Layer):
    """Applies a quantizer as a layer, e.g. ``QuantActivation("ste_sign")``."""

    def __init__(self, quantizer, **kwargs):
        super().__init__(**kwargs)
        self.quantizer = _quantizer_arg(quantizer)
        if self.quantizer is None:
            raise ValueError("QuantActivation needs a quantizer, e.g. QuantActivation('ste_sign')")

    def call(self, inputs, training=None):
        return self.quantizer(inputs, training=training)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config["quantizer"] = q.serialize(self.quantizer)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["quantizer"] = q.get(config["quantizer"])
        return cls(**config)
