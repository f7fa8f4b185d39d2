"""``AveragePooling2D`` (channels_last, "valid" padding) and the average of
``GlobalAveragePooling2D`` (see ``global_pool``).

A window of a power of two of values ``N = 2**k`` becomes an avgpool2d node, exact on a grid
``2**k`` times finer than its input's. Any other window becomes a sumpool2d step (the exact
integer sum of the ``N`` codes, on the input's grid) followed by the division as a
:class:`FloatOp`, which passes/fold_float_ops folds with the float ops and the quantizer after
it into one threshold node; without a quantizer after it the model is refused there (real-valued
outputs). The division replays Keras's own pooling: :func:`division` evaluates the Keras layer
on a constructed window holding the sum ``s`` (``s`` in one position, zeros elsewhere). That is
Keras's result on every window whose values sum to ``s``: Keras sums the window in float32 and
then divides by ``N``, and sums of on-grid values whose partial sums stay below 2**24 steps
(passes/float32_exactness checks the bound) are exact in float32 in any order, so the float32
sum is ``s`` either way and the division sees the same operand.

Either way the pool must read a tensor on a grid (a quantized tensor or an accumulator):
passes/check_on_grid refuses it among float ops, and unlike MaxPooling2D it is never moved
after a quantizer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from keras import ops

from ...graph import avgpool2d_node, sumpool2d_node
from ...graph.ops.avgpool2d import window_bits
from ..items import FloatOp, Layer, Step
from . import pooling

LABEL = "AveragePooling2D"
KIND = "avgpool2d"
SUM = "sumpool2d"


def check(layer) -> None:
    """Refuse the options the pool nodes do not have (see ``pooling.check``)."""
    pooling.check(layer, padding_reason="Keras divides its border windows by the fewer values they hold")


def division(layer, pool):
    """A Keras function of window sums ``x`` (n, ..., C) returning ``layer``'s average of a
    window holding each sum (the sum first, zeros after), in ``x``'s shape (a global pool
    without ``keepdims``: (n, C), as the layer gives it). ``pool`` is the window's size per
    spatial axis: (ph, pw), or (p,) for a 1-D pool."""
    flat = not getattr(layer, "keepdims", True)

    def divide(x):
        c = ops.shape(x)[-1]
        first = ops.reshape(x, (-1, *(1 for _ in pool), c))
        win = ops.pad(first, [[0, 0], *([0, p - 1] for p in pool), [0, 0]])
        return ops.reshape(layer(win), (-1, c) if flat else ops.shape(x))

    return divide


def steps(layer) -> Iterator:
    """The items of ``layer``'s average: an avgpool2d step, or a sumpool2d step and the division."""
    pool, _ = pooling.window(layer)
    if window_bits(pool) is not None:
        yield Step(layer.name, KIND, layer, sources=[layer.name])
        return
    yield Step(layer.name, SUM, layer, sources=[layer.name])
    yield division_op(layer, pool)


def division_op(layer, pool) -> FloatOp:
    """The division of ``layer``'s window sums by its window size, a float op (see :func:`division`)."""
    return FloatOp(f"{layer.name} (division by {math.prod(pool)})", division(layer, pool), layer=layer)


def lower(source: Layer) -> Iterator:
    """The average's items (passes/check_on_grid refuses them where float ops are pending)."""
    check(source.layer)
    yield from steps(source.layer)


def keras_eval(step: Step, x):
    """The mean as Keras computes it (float32; exact while the window sums are, see
    passes/float32_exactness)."""
    pool, strides = pooling.window(step.layer)
    return ops.average_pool(x, pool_size=pool, strides=strides, padding="valid", data_format="channels_last")


def node(step: Step, freezing):
    """The avgpool2d node reading its source."""
    pool, strides = pooling.window(step.layer)
    return avgpool2d_node(step.name, freezing.source(step), pool, strides, ",".join(step.sources))


def window_sums(x, pool, strides):
    """The sums of ``x``'s "valid" windows of ``pool`` (per spatial axis, 1-D or 2-D) at ``strides``,
    in float32 (a depthwise convolution with ones: exact below 2**24 steps)."""
    ones = ops.ones((*pool, ops.shape(x)[-1], 1), dtype=x.dtype)
    return ops.depthwise_conv(x, ones, strides=strides, padding="valid", data_format="channels_last")


def sum_keras_eval(step: Step, x):
    """The window sums in float32 (:func:`window_sums`)."""
    pool, strides = pooling.window(step.layer)
    return window_sums(x, pool, strides)


def sum_node(step: Step, freezing):
    """The sumpool2d node reading its source."""
    pool, strides = pooling.window(step.layer)
    return sumpool2d_node(step.name, freezing.source(step), pool, strides, ",".join(step.sources))


# step kinds of this family besides KIND: kind -> (keras_eval, node)
EXTRA_KINDS = {SUM: (sum_keras_eval, sum_node)}
