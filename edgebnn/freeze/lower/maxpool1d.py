"""``MaxPooling1D`` (channels_last, "valid" or "same" padding: a zeropad1d node first, as
``pooling`` pads a "same" MaxPooling2D) and ``GlobalMaxPooling1D``: a maxpool1d node (the global
pool over the whole length, then a flatten node unless ``keepdims``). Among float ops
it moves after the quantizer as MaxPooling2D does (passes/move_after_quantizer, checked exact
by passes/check_pool_move)."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import maxpool1d_node, zeropad1d_node
from ..items import Layer, Step
from . import pool1d, pooling

LABEL = "MaxPooling1D, GlobalMaxPooling1D"
KIND = "maxpool1d"
PAD = "pool_pad1d"  # the padding of a "same" max pool (a zeropad1d node)


def lower(source: Layer) -> Iterator:
    """A maxpool1d step (and the flatten step of a global pool)."""
    pool1d.check(source.layer, same=True)
    yield from pool1d.steps(source, KIND, pad_kind=PAD)


def keras_eval(step: Step, x):
    """The pool as Keras computes it."""
    return pool1d.keras_eval(step, x, ops.max, ops.max_pool)


def node(step: Step, freezing):
    """The maxpool1d node reading its source."""
    pool, strides = pool1d.window(step.layer)
    node = maxpool1d_node(step.name, freezing.source(step), pool, strides, ",".join(step.sources))
    return pooling.with_real_bounds(node, step, freezing)


def pad_node(step: Step, freezing):
    """The zeropad1d node of a "same" pool (``pooling.pad_code``, TensorFlow's split)."""
    src = freezing.source(step)
    padding = pooling.same_padding(step.layer)[0]
    return zeropad1d_node(step.name, src, padding, pooling.pad_code(src), ",".join(step.sources))


# step kinds of this family besides KIND: kind -> (keras_eval, node, traced)
EXTRA_KINDS = {PAD: (pooling.pass_on, pad_node, False)}
