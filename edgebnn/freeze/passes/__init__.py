"""The rewrites between a Keras layer chain and the graph's nodes, each in its own module.

:data:`PASSES` make the steps (``plan``): each is ``run(items, planning) -> items``, a
generator over the stream of items (``freeze/items.py``) starting as one :class:`Layer` per
Keras layer (in a branching model with ``Read`` / ``Wrote`` markers where the stream's order is
not the data flow, which ``branches`` consumes: the later passes, which rely on the stream's
order, meet a jump only where no float op is pending). The stream is lazy, so a model is
refused at the first layer that fails, in the layer's order, whichever pass refuses it.

:data:`NODE_PASSES` turn each step into its node (``freeze``): each is ``run(step,
freezing) -> None``, called on every step in order.
"""

from __future__ import annotations

from .. import lower
from . import (
    branches,
    build_node,
    cast_or_threshold,
    caveats,
    check_float64_sum,
    check_on_grid,
    check_pool_move,
    check_requantizers,
    check_start,
    fold_float_ops,
    input_quantizer,
    move_after_quantizer,
    strip_softmax,
    wire,
)

PASSES = [
    strip_softmax.run,  # drop the trailing softmax (strip_softmax=True)
    check_start.run,  # the first layer is a weighted layer whose input_quantizer sets the input type
    lower.run,  # each layer -> its handler's items
    input_quantizer.run,  # the first layer's input_quantizer -> the input step
    branches.run,  # a branching model: tensors read away from the stream are on a grid
    check_requantizers.run,  # every other quantizer is deployable
    move_after_quantizer.run,  # Flatten / MaxPooling2D among float ops -> after their quantizer
    check_on_grid.run,  # an AveragePooling2D reads a quantized tensor or an accumulator
    fold_float_ops.run,  # float ops + their quantizer -> one requant step
    cast_or_threshold.run,  # a plain conversion after relus -> a cast step
    wire.run,  # each step's inputs
]

NODE_PASSES = [
    check_pool_move.run,  # a moved pool is exact
    build_node.run,  # the step's node (thresholds derived by replaying Keras)
    check_float64_sum.run,  # a separable layer's float64 pointwise sum is exact
    caveats.run,  # where Keras's own result depends on the layout
]
