"""``MaxPooling1D`` (channels_last, "valid" padding) and ``GlobalMaxPooling1D``: a maxpool1d node
(the global pool over the whole length, then a flatten node unless ``keepdims``). Among float ops
it moves after the quantizer as MaxPooling2D does (passes/move_after_quantizer, checked exact
by passes/check_pool_move)."""

from __future__ import annotations

from collections.abc import Iterator

from keras import ops

from ...graph import maxpool1d_node
from ..items import Layer, Step
from . import pool1d

LABEL = "MaxPooling1D, GlobalMaxPooling1D"
KIND = "maxpool1d"


def lower(source: Layer) -> Iterator:
    """A maxpool1d step (and the flatten step of a global pool)."""
    pool1d.check(source.layer)
    yield from pool1d.steps(source, KIND)


def keras_eval(step: Step, x):
    """The pool as Keras computes it."""
    return pool1d.keras_eval(step, x, ops.max, ops.max_pool)


def node(step: Step, freezing):
    """The maxpool1d node reading its source."""
    pool, strides = pool1d.window(step.layer)
    return maxpool1d_node(step.name, freezing.source(step), pool, strides, ",".join(step.sources))
