"""``MaxPooling2D`` (channels_last, "valid" or "same" padding): a maxpool2d node, after a pad2d
node for "same" padding; :func:`window` and :func:`check` serve every pooling family.

Keras's "same" max pool takes the maximum of the real elements of each window (TensorFlow's
padding split: the odd row or column after). Every window holds at least one real element (the
padding before is under half a window), so padding with any value no greater than every
element leaves each maximum unchanged: the pad step pads with the lowest code the tensor can
hold (the minimum of its per-channel bounds, :func:`pad_code`), and the valid pool after it
computes Keras's result. Keras never holds the padded tensor, so ``trace`` does not compare it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from keras import ops

from ...graph import maxpool2d_node, pad2d_node
from ...training.layers import _same_padding
from ..items import FreezeError, Layer, Step, where

LABEL = "MaxPooling2D"
KIND = "maxpool2d"
PAD = "pool_pad2d"  # the padding of a "same" max pool (a pad2d node)


def window(layer) -> tuple[tuple[int, int], tuple[int, int]]:
    """(pool, strides) of a pooling layer; a global pooling layer's window is its whole (H, W) input."""
    if not hasattr(layer, "pool_size"):
        whole = (int(layer.input.shape[1]), int(layer.input.shape[2]))
        return whole, whole
    return tuple(int(d) for d in layer.pool_size), tuple(int(d) for d in layer.strides)


def check(layer, padding_reason: str = "", shape_name: str = "(H, W, C)", same: bool = False) -> None:
    """Refuse the options the pool nodes (maxpool2d, avgpool2d, maxpool1d, avgpool1d) do not have;
    ``padding_reason`` ends the sentence refusing a padding other than "valid" (``same``: "same"
    is accepted too, a max pool), ``shape_name`` names the input shape."""
    if layer.data_format != "channels_last":
        raise FreezeError(f"{where(layer)} uses data_format={layer.data_format!r}; only channels_last is supported")
    padding = getattr(layer, "padding", "valid")
    if padding != "valid" and not (same and padding == "same"):
        raise FreezeError(
            f"{where(layer)} has padding={layer.padding!r}; only padding='valid' can be frozen"
            + (f": {padding_reason}" if padding_reason else "")
        )
    rank = len(layer.pool_size) if hasattr(layer, "pool_size") else len(layer.input.shape) - 2  # a global pool's
    if len(layer.input.shape) != rank + 2 or any(d is None for d in layer.input.shape[1:]):
        raise FreezeError(f"{where(layer)} needs a fixed {shape_name} input shape; give the model a fixed input shape")


def same_padding(layer) -> tuple[tuple[int, int], ...]:
    """The (before, after) rows/columns of a "same" pool ``layer`` per spatial axis (none for "valid")."""
    spatial = layer.input.shape[1:-1]
    if getattr(layer, "padding", "valid") != "same":
        return tuple((0, 0) for _ in spatial)
    return tuple(_same_padding(int(n), int(p), int(s), 1) for n, p, s in zip(spatial, layer.pool_size, layer.strides))


def pad_code(src) -> int:
    """The code a "same" max pool pads ``src`` with: the lowest its bounds reach in any channel
    (no greater than any element, so no maximum changes; the bounds stay as wide as they are)."""
    code = int(np.floor(float(np.min(src.lo)) * 2.0**-src.type.lsb_exp))
    return min(max(code, src.type.min_code), src.type.max_code)


def pool_steps(source: Layer, kind: str, pad_kind: str) -> list[Step]:
    """The pad step of ``pad_kind`` of a "same" pool (none for "valid") and the pool step of ``kind``."""
    layer = source.layer
    same = getattr(layer, "padding", "valid") == "same"
    pad = [Step(f"{layer.name}_pad", pad_kind, layer, sources=[layer.name])] if same else []
    return [*pad, Step(layer.name, kind, layer, sources=[layer.name])]


def lower(source: Layer) -> Iterator:
    """The pad2d step of a "same" pool and the maxpool2d step (passes/move_after_quantizer moves
    both after a quantizer that follows; passes/check_pool_move checks that move is exact)."""
    check(source.layer, same=True)
    yield from pool_steps(source, KIND, PAD)


def keras_eval(step: Step, x):
    """The pool as Keras computes it (on the unpadded tensor: the pad step passes it on as it is)."""
    pool, strides = window(step.layer)
    padding = getattr(step.layer, "padding", "valid")  # a global pool has none
    return ops.max_pool(x, pool_size=pool, strides=strides, padding=padding, data_format="channels_last")


def pass_on(step: Step, x):
    """A pad step in Keras: the tensor unchanged (the pool pads it itself)."""
    return x


def with_real_bounds(pool, step: Step, freezing):
    """The pool node ``pool`` of a "same" pool with the bounds of the tensor before its pad step
    (the node it reads): a maximum of real elements lies within them."""
    if getattr(step.layer, "padding", "valid") == "same":
        real = freezing.node(freezing.source(step).inputs[0])
        pool.params["lo"], pool.params["hi"] = real.lo.copy(), real.hi.copy()
    return pool


def node(step: Step, freezing):
    """The maxpool2d node reading its source."""
    pool, strides = window(step.layer)
    node = maxpool2d_node(step.name, freezing.source(step), pool, strides, ",".join(step.sources))
    return with_real_bounds(node, step, freezing)


def pad_node(step: Step, freezing):
    """The pad2d node of a "same" pool: :func:`same_padding` of :func:`pad_code`."""
    src = freezing.source(step)
    return pad2d_node(step.name, src, same_padding(step.layer), pad_code(src), ",".join(step.sources))


# step kinds of this family besides KIND: kind -> (keras_eval, node, traced)
EXTRA_KINDS = {PAD: (pass_on, pad_node, False)}
