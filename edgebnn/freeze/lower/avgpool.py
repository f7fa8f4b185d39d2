"""``AveragePooling2D`` (channels_last, "valid" padding, a window of a power of two of values):
an avgpool2d node, exact on a grid ``2**k`` times finer than its input's.

It must read a tensor on a grid (a quantized tensor or an accumulator): passes/check_on_grid
refuses it among float ops, and unlike MaxPooling2D it is never moved after a quantizer.
"""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import avgpool2d_node
from ...graph.ops.avgpool2d import window_bits
from ..items import FreezeError, Layer, Step, where
from . import pooling

LABEL = "AveragePooling2D"
KIND = "avgpool2d"


def check(layer) -> None:
    """Refuse the options the avgpool2d node does not have: those of every pool, and a window
    whose mean no fixed-point type holds."""
    pooling.check(layer, padding_reason="Keras divides its border windows by the fewer values they hold")
    ph, pw = layer.pool_size
    if window_bits((ph, pw)) is None:
        raise FreezeError(
            f"{where(layer)} averages {ph}x{pw} windows: a {ph}x{pw} window divides by {ph * pw}, which no "
            "fixed-point type holds exactly; use a pool whose area is a power of two such as (2, 2), or MaxPooling2D"
        )


def lower(source: Layer) -> Iterator:
    """An avgpool2d step (passes/check_on_grid refuses it where float ops are pending)."""
    check(source.layer)
    yield Step(source.layer.name, KIND, source.layer, sources=[source.layer.name])


def keras_eval(step: Step, x):
    """The mean as Keras computes it (float32; exact while the window sums are, see
    passes/float32_exactness)."""
    return ops.average_pool(
        x, pool_size=tuple(step.layer.pool_size), strides=tuple(step.layer.strides), padding="valid", data_format="channels_last"
    )


def node(step: Step, freezing):
    """The avgpool2d node reading its source."""
    layer = step.layer
    return avgpool2d_node(step.name, freezing.source(step), tuple(layer.pool_size), tuple(layer.strides), ",".join(step.sources))
