"""``MaxPooling2D`` (channels_last, "valid" padding): a maxpool2d node."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import maxpool2d_node
from ..items import FreezeError, Layer, Step, where

LABEL = "MaxPooling2D"
KIND = "maxpool2d"


def check(layer, padding_reason: str = "", shape_name: str = "(H, W, C)") -> None:
    """Refuse the options the pool nodes (maxpool2d, avgpool2d, maxpool1d, avgpool1d) do not have;
    ``padding_reason`` ends the sentence refusing a padding other than "valid", ``shape_name``
    names the input shape."""
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where(layer)} uses data_format={layer.data_format!r}; only channels_last is supported")
    if layer.padding != "valid":
        raise FreezeError(
            f"{where(layer)} has padding={layer.padding!r}; only padding='valid' can be frozen"
            + (f": {padding_reason}" if padding_reason else "")
        )
    if len(layer.input.shape) != len(layer.pool_size) + 2 or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where(layer)} needs a fixed {shape_name} input shape; give the model a fixed input shape")


def lower(source: Layer) -> Iterator:
    """A maxpool2d step (passes/move_after_quantizer moves it after a quantizer that follows;
    passes/check_pool_move checks that move is exact)."""
    check(source.layer)
    yield Step(source.layer.name, KIND, source.layer, sources=[source.layer.name])


def keras_eval(step: Step, x):
    """The pool as Keras computes it."""
    return ops.max_pool(
        x, pool_size=tuple(step.layer.pool_size), strides=tuple(step.layer.strides), padding="valid", data_format="channels_last"
    )


def node(step: Step, freezing):
    """The maxpool2d node reading its source."""
    layer = step.layer
    return maxpool2d_node(step.name, freezing.source(step), tuple(layer.pool_size), tuple(layer.strides), ",".join(step.sources))
