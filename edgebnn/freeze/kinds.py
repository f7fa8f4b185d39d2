"""What each step kind is: how Keras computes it (``Step.keras_eval``) and how it becomes a
node. The kinds of the layer families come from their handler modules (``KIND``, and
``EXTRA_KINDS`` for a family with more than one); the input
and the requantizations are made by passes."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from . import replay
from .lower import HANDLERS, inputs
from .passes import affine, cast_or_threshold, thresholds


class Kind(NamedTuple):
    """A step kind: its Keras evaluation and its node builder."""

    keras_eval: Callable  # (step, keras tensor) -> keras tensor
    node: Callable  # (step, freezing) -> Node reading the step's inputs (freezing.source(step))
    traced: bool = True  # Keras holds the step's tensor (``trace`` records it; a pool's own padding it does not)


KINDS = {
    "input": Kind(inputs.keras_eval, inputs.node),
    **{m.KIND: Kind(m.keras_eval, m.node) for m in HANDLERS.values() if hasattr(m, "KIND")},
    **{kind: Kind(*fns) for m in HANDLERS.values() for kind, fns in getattr(m, "EXTRA_KINDS", {}).items()},
    "requant": Kind(replay.run_ops, thresholds.node),
    "cast": Kind(replay.run_ops, cast_or_threshold.node),
    "affine": Kind(lambda step, x: replay.run_ops(step, x, quantize=False), affine.node),
}
