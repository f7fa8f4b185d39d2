"""The model read as a chain of layers, and where its trailing softmax is."""

from __future__ import annotations

import keras

from ..layers import QuantDense
from .items import FreezeError


def layer_chain(model) -> list:
    """The model's layers in order (the InputLayer left out); refuses anything but a chain."""
    if not isinstance(model, keras.Model):
        raise FreezeError(
            f"freeze needs a Keras model (keras.Sequential or keras.Model), got {type(model).__name__}; "
            "load a saved one with keras.saving.load_model(path, safe_mode=True)"
        )
    layers = [l for l in model.layers if not isinstance(l, keras.layers.InputLayer)]
    if not isinstance(model, keras.Sequential):
        prev = None
        for layer in layers:
            inbound = layer._inbound_nodes
            ok = len(inbound) == 1 and len(inbound[0].parent_nodes) <= 1
            if ok and prev is not None:
                parents = inbound[0].parent_nodes
                ok = bool(parents) and parents[0].operation is prev
            if not ok:
                raise FreezeError(
                    f"layer {layer.name!r} ({type(layer).__name__}) is not part of a simple chain; "
                    "freeze supports sequential models for now"
                )
            prev = layer
    return layers


def trailing_softmax(layers) -> int | None:
    """Index of the model's last layer (Dropout skipped) when it applies softmax, else None."""
    for i in range(len(layers) - 1, -1, -1):
        layer = layers[i]
        if isinstance(layer, keras.layers.Dropout):
            continue
        if isinstance(layer, keras.layers.Softmax):
            return i
        fn = getattr(layer, "activation", None)
        if isinstance(layer, (keras.layers.Activation, QuantDense)) and _is_softmax(fn):
            return i
        return None
    return None


def _is_softmax(fn) -> bool:
    return fn is not None and getattr(fn, "__name__", "") == "softmax"


def model_jit(model) -> bool:
    """The model is compiled for XLA (``jit_compile=True``)."""
    try:
        return bool(model.jit_compile)
    except Exception:  # noqa: BLE001 - an uncompiled model resolves "auto" lazily
        return False
