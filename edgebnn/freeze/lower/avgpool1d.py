"""``AveragePooling1D`` (channels_last, "valid" padding) and ``GlobalAveragePooling1D`` (a pool
over the whole length, then a flatten node unless ``keepdims``), the 1-D forms of ``avgpool``.

A window of a power of two of values ``p = 2**k`` becomes an avgpool1d node, exact on a grid
``2**k`` times finer than its input's. Any other window becomes a sumpool1d step (the exact
integer sum of the ``p`` codes, on the input's grid) followed by the division as a float op
replayed through the Keras layer (``avgpool.division``), which passes/fold_float_ops folds with
the float ops and the quantizer after it into one threshold node; without a quantizer after it
the model is refused there. As AveragePooling2D it must read a tensor on a grid
(passes/check_on_grid)."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import avgpool1d_node, sumpool1d_node
from ...graph.ops.avgpool2d import window_bits
from ..items import Layer, Step
from . import avgpool, pool1d

LABEL = "AveragePooling1D, GlobalAveragePooling1D"
KIND = "avgpool1d"
SUM = "sumpool1d"


def check(layer) -> None:
    """Refuse the options the 1-D pool nodes do not have (those of every pool)."""
    pool1d.check(layer, padding_reason="Keras divides its border windows by the fewer values they hold")


def lower(source: Layer) -> Iterator:
    """An avgpool1d step, or a sumpool1d step and the division (and the flatten step of a global pool)."""
    check(source.layer)
    p, _ = pool1d.window(source.layer)
    if window_bits((1, p)) is not None:
        yield from pool1d.steps(source, KIND)
        return
    yield from pool1d.steps(source, SUM, then=[avgpool.division_op(source.layer, (p,))])


def keras_eval(step: Step, x):
    """The mean as Keras computes it (float32; exact while the window sums are, see
    passes/float32_exactness)."""
    return pool1d.keras_eval(step, x, ops.mean, ops.average_pool)


def node(step: Step, freezing):
    """The avgpool1d node reading its source."""
    pool, strides = pool1d.window(step.layer)
    return avgpool1d_node(step.name, freezing.source(step), pool, strides, ",".join(step.sources))


def sum_keras_eval(step: Step, x):
    """The window sums in float32 (``avgpool.window_sums``; a global pool's window is the whole length)."""
    pool, strides = pool1d.window(step.layer)
    return avgpool.window_sums(x, (pool,), (strides,))


def sum_node(step: Step, freezing):
    """The sumpool1d node reading its source."""
    pool, strides = pool1d.window(step.layer)
    return sumpool1d_node(step.name, freezing.source(step), pool, strides, ",".join(step.sources))


# step kinds of this family besides KIND: kind -> (keras_eval, node)
EXTRA_KINDS = {SUM: (sum_keras_eval, sum_node)}
