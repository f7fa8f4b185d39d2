"""The model read as a graph of layers (in an order that keeps each chain of layers together),
and where its trailing softmax is."""

from __future__ import annotations

import keras

from ..training.layers import QuantDense
from .items import FreezeError


def layer_chain(model) -> list:
    """The model's layers (the InputLayer left out) in topological order, each chain of layers
    together: a layer whose one input is the layer before it follows it directly. Refuses what
    freeze cannot read: several inputs or outputs, a layer called more than once, an input
    read by more than one layer."""
    if not isinstance(model, keras.Model):
        raise FreezeError(
            f"freeze needs a Keras model (keras.Sequential or keras.Model), got {type(model).__name__}; "
            "load a saved one with keras.saving.load_model(path, safe_mode=True)"
        )
    layers = [l for l in model.layers if not isinstance(l, keras.layers.InputLayer)]
    if isinstance(model, keras.Sequential):
        return layers
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        raise FreezeError(
            f"model {model.name!r} has {len(model.inputs)} inputs and {len(model.outputs)} outputs; "
            "freeze supports models with one input and one output"
        )
    for layer in layers:
        if len(layer._inbound_nodes) != 1:
            raise FreezeError(
                f"layer {layer.name!r} ({type(layer).__name__}) is called {len(layer._inbound_nodes)} times; "
                "freeze supports layers called once (give each call its own layer)"
            )
    readers = {id(l): [r for r in layers if l in inbound(r)] for l in model.layers}
    first = [r for l in model.layers if isinstance(l, keras.layers.InputLayer) for r in readers[id(l)]]
    if len(first) > 1:
        raise FreezeError(
            f"the model's input is read by {', '.join(repr(l.name) for l in first)}; freeze needs one first layer "
            "whose input_quantizer quantizes it (quantize before the branch, e.g. with a QuantActivation)"
        )
    order: list = []
    done: set[int] = {id(l) for l in model.layers if isinstance(l, keras.layers.InputLayer)}
    while len(order) < len(layers):
        ready = [l for l in layers if id(l) not in done and all(id(i) in done for i in inbound(l))]
        # continue the chain of the layer just placed where it has one reader reading only it
        after = [l for l in ready if order and inbound(l) == [order[-1]] and len(readers[id(order[-1])]) == 1]
        layer = (after or ready)[0]
        order.append(layer)
        done.add(id(layer))
    return order


def inbound(layer) -> list:
    """The layers whose outputs ``layer`` reads, in the order of its inputs (InputLayer included)."""
    node = layer._inbound_nodes[0] if layer._inbound_nodes else None
    return [parent.operation for parent in node.parent_nodes] if node is not None else []


def branches(model, layers) -> bool:
    """The functional ``model``'s layers (in :func:`layer_chain` order) are not a chain: some
    layer reads another than the one before it, or more than one. A Sequential model never branches."""
    if isinstance(model, keras.Sequential):
        return False
    return any(inbound(l)[1:] or (i and inbound(l) != [layers[i - 1]]) for i, l in enumerate(layers))


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
