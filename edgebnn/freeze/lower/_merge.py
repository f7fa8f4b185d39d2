"""What the merge families (``Add``, ``Concatenate``) share: one step reading every input (its
inputs come from passes/branches), Keras's own call on them, and the check that each input is
a tensor of known shape."""

from __future__ import annotations

from ..items import FreezeError, Step, where


def check_shapes(layer) -> list[tuple]:
    """The shapes (batch axis left out) of the layer's inputs; refuses an unknown dimension."""
    shapes = [tuple(t.shape[1:]) for t in layer.input]
    if any(d is None for shape in shapes for d in shape):
        raise FreezeError(f"{where(layer)} needs inputs of fixed shapes; give the model a fixed input shape")
    return shapes


def step(layer, kind: str) -> Step:
    """The merge step of ``layer``."""
    return Step(layer.name, kind, layer, sources=[layer.name])


def keras_eval(step: Step, xs):
    """The merge as Keras computes it: the layer's own call on its inputs' tensors (a list)."""
    return step.layer(list(xs))
