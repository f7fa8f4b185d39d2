"""``MaxPooling2D`` (channels_last, "valid" padding): a maxpool2d node; :func:`window` and
:func:`check` serve every pooling family."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import maxpool2d_node
from ..items import FreezeError, Layer, Step, where

LABEL = "MaxPooling2D"
KIND = "maxpool2d"


def window(layer) -> tuple[tuple[int, int], tuple[int, int]]:
    """(pool, strides) of a pooling layer; a global pooling layer's window is its whole (H, W) input."""
    if not hasattr(layer, "pool_size"):
        whole = (int(layer.input.shape[1]), int(layer.input.shape[2]))
        return whole, whole
    return tuple(int(d) for d in layer.pool_size), tuple(int(d) for d in layer.strides)


def check(layer, padding_reason: str = "", shape_name: str = "(H, W, C)") -> None:
    """Refuse the options the pool nodes (maxpool2d, avgpool2d, maxpool1d, avgpool1d) do not have;
    ``padding_reason`` ends the sentence refusing a padding other than "valid", ``shape_name``
    names the input shape."""
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where(layer)} uses data_format={layer.data_format!r}; only channels_last is supported")
    if getattr(layer, "padding", "valid") != "valid":
        raise FreezeError(
            f"{where(layer)} has padding={layer.padding!r}; only padding='valid' can be frozen"
            + (f": {padding_reason}" if padding_reason else "")
        )
    rank = len(layer.pool_size) if hasattr(layer, "pool_size") else len(layer.input.shape) - 2  # a global pool's
    if len(layer.input.shape) != rank + 2 or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where(layer)} needs a fixed {shape_name} input shape; give the model a fixed input shape")


def lower(source: Layer) -> Iterator:
    """A maxpool2d step (passes/move_after_quantizer moves it after a quantizer that follows;
    passes/check_pool_move checks that move is exact)."""
    check(source.layer)
    yield Step(source.layer.name, KIND, source.layer, sources=[source.layer.name])


def keras_eval(step: Step, x):
    """The pool as Keras computes it."""
    pool, strides = window(step.layer)
    return ops.max_pool(x, pool_size=pool, strides=strides, padding="valid", data_format="channels_last")


def node(step: Step, freezing):
    """The maxpool2d node reading its source."""
    pool, strides = window(step.layer)
    return maxpool2d_node(step.name, freezing.source(step), pool, strides, ",".join(step.sources))
