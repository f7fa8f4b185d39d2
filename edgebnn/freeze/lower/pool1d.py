"""What the 1-D pooling handlers share: a ``MaxPooling1D`` / ``AveragePooling1D`` is checked as
the 2-D pools are; a ``GlobalMaxPooling1D`` / ``GlobalAveragePooling1D`` is a pool over the whole
length followed (unless ``keepdims``) by a flatten step of its one position."""

from __future__ import annotations

from collections.abc import Iterator

import keras

from ..items import FreezeError, Layer, Step, where
from . import pooling

GLOBAL = (keras.layers.GlobalMaxPooling1D, keras.layers.GlobalAveragePooling1D)


def is_global(layer) -> bool:
    """The layer pools over the whole length."""
    return isinstance(layer, GLOBAL)


def check(layer, padding_reason: str = "", same: bool = False) -> None:
    """Refuse the options the 1-D pool nodes do not have (``same``: "same" padding is accepted, a max pool)."""
    if not is_global(layer):
        pooling.check(layer, padding_reason, shape_name="(L, C)", same=same)
        return
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where(layer)} uses data_format={layer.data_format!r}; only channels_last is supported")
    if len(layer.input.shape) != 3 or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where(layer)} needs a fixed (L, C) input shape; give the model a fixed input shape")


def window(layer) -> tuple[int, int]:
    """(pool, strides) of the layer: the whole length for a global pool."""
    if is_global(layer):
        n = int(layer.input.shape[1])
        return n, n
    return int(layer.pool_size[0]), int(layer.strides[0])


def steps(source: Layer, kind: str, then=(), pad_kind: str = "") -> Iterator:
    """The pad step of ``pad_kind`` of a "same" pool, the pool step of ``kind``, the items ``then``
    (an average's division), and for a global pool without ``keepdims`` a flatten step."""
    layer = source.layer
    yield from pooling.pool_steps(source, kind, pad_kind)
    yield from then
    if is_global(layer) and not layer.keepdims:
        yield Step(f"{layer.name}_flatten", "flatten", layer, sources=[layer.name])


def keras_eval(step: Step, x, reduce, pool):
    """The pool as Keras computes it: ``reduce`` (ops.max, ops.mean) over the length for a global
    pool (its own flatten is the flatten step), ``pool`` (ops.max_pool, ops.average_pool) otherwise."""
    layer = step.layer
    if is_global(layer):
        return reduce(x, axis=1, keepdims=True)
    strides = tuple(layer.strides)
    return pool(x, pool_size=tuple(layer.pool_size), strides=strides, padding=layer.padding, data_format="channels_last")
