"""``AveragePooling1D`` (channels_last, "valid" padding, a window of a power of two of values) and
``GlobalAveragePooling1D`` (a length of a power of two): an avgpool1d node, exact on a grid
``2**k`` times finer than its input's (the global pool over the whole length, then a flatten node
unless ``keepdims``). As AveragePooling2D it must read a tensor on a grid (passes/check_on_grid)."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import avgpool1d_node
from ...graph.ops.avgpool2d import window_bits
from ..items import FreezeError, Layer, Step, where
from . import pool1d

LABEL = "AveragePooling1D, GlobalAveragePooling1D"
KIND = "avgpool1d"


def check(layer) -> None:
    """Refuse the options the avgpool1d node does not have: those of every pool, and a window
    whose mean no fixed-point type holds."""
    pool1d.check(layer, padding_reason="Keras divides its border windows by the fewer values they hold")
    p, _ = pool1d.window(layer)
    if window_bits((1, p)) is None:
        if pool1d.is_global(layer):
            raise FreezeError(
                f"{where(layer)} averages {p} values: a mean of {p} values divides by {p}, which no fixed-point "
                "type holds exactly; give it an input length that is a power of two such as 8, or use GlobalMaxPooling1D"
            )
        raise FreezeError(
            f"{where(layer)} averages windows of {p} values: a window of {p} divides by {p}, which no fixed-point "
            "type holds exactly; use a pool size that is a power of two such as 2, or MaxPooling1D"
        )


def lower(source: Layer) -> Iterator:
    """An avgpool1d step (and the flatten step of a global pool)."""
    check(source.layer)
    yield from pool1d.steps(source, KIND)


def keras_eval(step: Step, x):
    """The mean as Keras computes it (float32; exact while the window sums are, see
    passes/float32_exactness)."""
    return pool1d.keras_eval(step, x, ops.mean, ops.average_pool)


def node(step: Step, freezing):
    """The avgpool1d node reading its source."""
    pool, strides = pool1d.window(step.layer)
    return avgpool1d_node(step.name, freezing.source(step), pool, strides, ",".join(step.sources))
