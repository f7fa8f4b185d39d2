"""What each step kind is: how Keras computes it (``Step.keras_eval``) and how it becomes a node."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from . import replay
from .lower import conv2d, dense, inputs, pooling, reshape
from .passes import cast_or_threshold, thresholds


class Kind(NamedTuple):
    keras_eval: Callable  # (step, keras tensor) -> keras tensor
    node: Callable  # (step, freezing) -> Node reading the last node built


KINDS = {
    "input": Kind(inputs.keras_eval, inputs.node),
    "dense": Kind(dense.keras_eval, dense.node),
    "conv2d": Kind(conv2d.keras_eval, conv2d.node),
    "flatten": Kind(reshape.keras_eval, reshape.node),
    "maxpool2d": Kind(pooling.keras_eval, pooling.node),
    "requant": Kind(replay.run_ops, thresholds.node),
    "cast": Kind(replay.run_ops, cast_or_threshold.node),
}
