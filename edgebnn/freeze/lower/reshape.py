"""``Flatten`` (channels_last): a flatten node for an (H, W, C) or (L, C) tensor, nothing for a flat one."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import flatten_node
from ..items import FreezeError, Layer, Step, where

LABEL = "Flatten"
KIND = "flatten"


def lower(source: Layer) -> Iterator:
    """A flatten step (passes/move_after_quantizer moves it after a quantizer that follows); a
    Flatten of a flat tensor is nothing."""
    from . import unsupported

    layer = source.layer
    rank = len(layer.input.shape)
    if rank == 2:
        return
    if rank not in (3, 4):  # (L, C) or (H, W, C)
        raise unsupported(layer)
    if getattr(layer, "data_format", "channels_last") != "channels_last":
        raise FreezeError(f"{where(layer)} flattens channels_first data; only channels_last is supported")
    yield Step(layer.name, KIND, layer, sources=[layer.name])


def keras_eval(step: Step, x):
    """The reshape as Keras computes it."""
    return ops.reshape(x, (ops.shape(x)[0], -1))


def node(step: Step, freezing):
    """The flatten node reading its source."""
    return flatten_node(step.name, freezing.source(step), ",".join(step.sources))
