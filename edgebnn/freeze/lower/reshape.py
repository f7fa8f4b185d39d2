"""``Flatten`` and ``Reshape`` (channels_last): views of the channels-last row-major data.

A ``Flatten`` of an (H, W, C) or (L, C) tensor, or a ``Reshape`` to one axis, becomes a flatten
node; a ``Reshape`` to two or three axes a reshape node; a flatten of a flat tensor, or a
reshape to the shape it has, is nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import keras
import numpy as np
from keras import ops

from ...graph import flatten_node, reshape_node
from ..items import FreezeError, Layer, NotLowered, Step, where

LABEL = "Flatten, Reshape"
KIND = "flatten"
RESHAPE = "reshape"


def _shapes(layer) -> tuple[tuple, tuple]:
    inp = tuple(layer.input.shape[1:])
    out = tuple(layer.output.shape[1:])
    if any(d is None for d in inp + out):
        raise FreezeError(f"{where(layer)} needs a fixed input shape; give the model a fixed input shape")
    return inp, out


def lower(source: Layer) -> Iterator:
    """A flatten or reshape step (passes/move_after_quantizer moves it after a quantizer that
    follows); nothing for a view that keeps the shape."""
    layer = source.layer
    if getattr(layer, "data_format", "channels_last") != "channels_last":
        raise FreezeError(f"{where(layer)} flattens channels_first data; only channels_last is supported")
    if not isinstance(layer, keras.layers.Reshape):
        rank = len(layer.input.shape)
        if rank == 2:
            return
        if rank not in (3, 4):  # (L, C) or (H, W, C)
            raise NotLowered(layer)
        yield Step(layer.name, KIND, layer, sources=[layer.name])
        return
    inp, out = _shapes(layer)
    if len(out) > 3:
        raise FreezeError(f"{where(layer)} reshapes to {out}; only shapes of one to three axes (H, W, C) can be frozen")
    if out == inp:
        return
    kind = KIND if len(out) == 1 else RESHAPE
    yield Step(layer.name, kind, layer, sources=[layer.name])


def mixes_channels(step: Step) -> bool:
    """The flatten or reshape step puts values of different input channels on one output channel,
    so per-channel parameters after it differ from those before it (a flatten of one position, a
    global pool's, keeps them)."""
    layer = step.layer
    if isinstance(
        layer, keras.layers.GlobalMaxPooling2D | keras.layers.GlobalAveragePooling2D | keras.layers.GlobalAveragePooling1D
    ):
        return False  # the flatten of a global pool: one position
    if not isinstance(layer, keras.layers.Flatten | keras.layers.Reshape):
        return True
    inp, out = tuple(layer.input.shape[1:]), tuple(layer.output.shape[1:])
    if step.kind == KIND:
        return int(np.prod(inp[:-1])) > 1
    return inp[-1] != out[-1]


def label(step: Step) -> str:
    """How an error names the layer of a flatten or reshape step: Flatten or Reshape."""
    return "Reshape" if isinstance(step.layer, keras.layers.Reshape) or step.kind == RESHAPE else "Flatten"


def keras_eval(step: Step, x):
    """The reshape as Keras computes it."""
    return ops.reshape(x, (ops.shape(x)[0], -1))


def node(step: Step, freezing):
    """The flatten node reading its source."""
    return flatten_node(step.name, freezing.source(step), ",".join(step.sources))


def reshape_keras_eval(step: Step, x):
    """The reshape as Keras computes it."""
    return ops.reshape(x, (ops.shape(x)[0], *step.layer.output.shape[1:]))


def reshape_node_of(step: Step, freezing):
    """The reshape node reading its source."""
    return reshape_node(step.name, freezing.source(step), tuple(step.layer.output.shape[1:]), ",".join(step.sources))


EXTRA_KINDS = {RESHAPE: (reshape_keras_eval, reshape_node_of)}
