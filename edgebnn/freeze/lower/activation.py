"""``Activation``: an elementwise float activation (also a weighted layer's own ``activation``)."""

from __future__ import annotations

from collections.abc import Iterator

import keras

from ..items import FloatOp, FreezeError, Layer

LABEL = "elementwise Activation"

# elementwise activations whose float32 results TensorFlow computes identically at every tensor
# position (checked against one-element tensors); any other may differ by a few ulps between the
# vectorized body and the scalar tail of a tensor, so Keras's own output can depend on the layout
_LAYOUT_STABLE = {"linear", "relu", "relu6", "tanh", "softsign", "hard_sigmoid", "hard_silu", "hard_swish", "leaky_relu", "sign"}


# activations whose float32 result is monotone in its input, rounding included: each is a
# composition of correctly rounded +, *, min and max with constants (a transcendental one such
# as tanh or sigmoid is computed by a polynomial approximation, not proven monotone ulp by ulp;
# leaky_relu by Keras's default positive slope)
_MONOTONE = {"linear", "relu", "relu6", "leaky_relu", "hard_sigmoid", "hard_tanh", "sign"}


# activations TensorFlow's grappler remapper fuses into a Conv2D or MatMul (with its bias) and
# that round differently there (relu, relu6 and leaky_relu are exact either way)
_FUSABLE = {"elu", "tanh", "sigmoid", "gelu", "silu", "swish"}


def layout_sensitive(fn) -> str | None:
    """The activation's name when TensorFlow may compute it differently at different tensor
    positions, else None."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return None if name in _LAYOUT_STABLE else name


def float_op(layer, label: str, fn, activation) -> FloatOp:
    """The float op of ``layer`` applying ``activation`` (computed as ``fn``); refuses softmax."""
    name = getattr(activation, "__name__", str(activation))
    if name in ("softmax", "log_softmax"):
        raise FreezeError(
            f"layer {layer.name!r} ({type(layer).__name__}) applies {name}, which is not elementwise and not "
            "exact in hardware; remove it and train with from_logits=True (argmax is unchanged)"
        )
    return FloatOp(
        label,
        fn,
        relu=activation is keras.activations.relu,
        layout_sensitive=layout_sensitive(activation),
        fusable=name if name in _FUSABLE else None,
        layer=layer,
        monotone=name in _MONOTONE,
    )


def lower(source: Layer) -> Iterator:
    """An ``Activation``: its float op (none for linear)."""
    layer = source.layer
    if layer.activation is not keras.activations.linear:
        yield float_op(layer, layer.name, lambda x, l=layer: l(x), layer.activation)
