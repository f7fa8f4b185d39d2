"""In a branching model, where the stream's order is not the data flow: each tensor read away
from the stream (by a merge, or by several layers) must be on a grid, and the step that reads
it records which steps it reads (``planning.reads``).

The stream keeps each chain of layers together (``chain.layer_chain``), so the adjacency
passes (float ops folded into their quantizer, moves of Flatten / MaxPooling2D) see only
chains. A tensor is on a grid when it is a step's output with no float op after it: a
quantizer's (``QuantActivation``, an ``input_quantizer``; the output of the Flatten or
MaxPooling2D moved after it, if any), an accumulator's or a merge's before any float op, a
pool's or flatten's of those. A real-valued tensor (after a float bias, ``BatchNormalization``
or an activation, before its quantizer) that several layers read, or that a merge reads, is
refused: it must be quantized before the branch. So is the output of a scaled
``QuantActivation`` (DoReFa's ``1/(2**k-1)``, a numeric ``alpha``): the stream holds its codes
and the scale comes after them as a float op (``forms.activation_scale``), which a merge or a
second reader would not see.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import keras

from ... import forms
from ...training.quantizers import NoHardwareForm
from ..items import FloatOp, FreezeError, OffGrid, Planning, Quantize, Read, Step, Wrote, where


def run(items: Iterable, planning: Planning) -> Iterator:
    """The items without the :class:`Read` / :class:`Wrote` markers; ``planning.reads`` filled."""
    tensor: dict[int, str] = {}  # id of a Keras layer -> the step holding its output (on a grid)
    current = ""  # the step holding the stream's tensor ("" while float ops are pending)
    pending: list[FloatOp] = []  # the float ops since that step
    moved: list[Step] = []  # steps among them that move after their quantizer (passes/move_after_quantizer)
    last = None  # the last Wrote: the layer whose output the stream holds, and its readers
    reads: list[str] | None = None  # the steps the layer after a Read reads, until its first step takes them
    scaled = None  # the scaled QuantActivation whose codes the stream holds (its scale still to come), else None
    scaled_by: dict[int, object] = {}  # id of a Keras layer -> that QuantActivation, for a tensor of scaled codes
    for item in items:
        if isinstance(item, Read):
            if pending:  # the stream's real-valued tensor is read by a merge (elsewhere it would have branched)
                raise OffGrid(_off_grid(last.layer, last.readers[0]), last.layer)
            off = [layer for layer in item.inputs if not tensor.get(id(layer))]
            if off:
                raise OffGrid(_off_grid(off[0], item.layer), off[0])
            coded = [layer for layer in item.inputs if id(layer) in scaled_by]
            if coded:
                raise FreezeError(_scaled(coded[0], scaled_by[id(coded[0])], [item.layer]))
            reads = [tensor[id(layer)] for layer in item.inputs]
            current = reads[0] if len(reads) == 1 else ""
            continue
        if isinstance(item, Wrote):
            if pending and len(item.readers) > 1:
                raise OffGrid(
                    f"{where(item.layer)}: its real-valued outputs branch to {_names(item.readers)} before any "
                    f"quantizer; quantize before the branch (e.g. a QuantActivation after {item.layer.name!r}), as a "
                    "tensor must be on a grid where it branches",
                    item.layer,
                )
            if scaled is not None and len(item.readers) > 1:
                raise FreezeError(_scaled(item.layer, scaled, item.readers))
            tensor[id(item.layer)] = current
            if scaled is not None:
                scaled_by[id(item.layer)] = scaled
            last = item
            continue
        if isinstance(item, FloatOp):
            pending.append(item)
            current = ""
        elif isinstance(item, Quantize) and item.quantizer is not None:
            _take(planning, item.name, reads)
            reads = None
            # the quantized tensor is the last moved step's output, as the steps come after it
            current = moved[-1].name if moved else item.name
            pending, moved = [], []
            scaled = item.layer if item.which == "quantizer" and _scales(item.quantizer) else None
        elif isinstance(item, Quantize):  # a weighted layer without an input quantizer: it sums the stream's values
            scaled = None
        elif isinstance(item, Step) and pending:
            moved.append(item)
        elif isinstance(item, Step):
            _take(planning, item.name, reads)
            reads = None
            current = item.name
        yield item


def _take(planning: Planning, name: str, reads: list[str] | None) -> None:
    if reads is not None:
        planning.reads[name] = reads


def _off_grid(layer, merge) -> str:
    return (
        f"{where(layer)}: its real-valued outputs reach the merge {merge.name!r}, which must read tensors on a grid; "
        f"quantize before the merge (e.g. a QuantActivation after {layer.name!r}) or merge the accumulators before the "
        "float ops"
    )


def _scales(quantizer) -> bool:
    """The quantizer's hardware form is scaled codes (one without a form is refused later, by check_requantizers)."""
    try:
        return isinstance(quantizer.hardware(), forms.Scaled)
    except (NoHardwareForm, NotImplementedError):
        return False


def _scaled(layer, activation, readers) -> str:
    """The refusal of a tensor of scaled codes (``activation``'s, through ``layer``) read away from its chain."""
    through = "" if layer is activation else f" through {layer.name!r}"
    merges = any(isinstance(r, (keras.layers.Add, keras.layers.Concatenate)) for r in readers)
    instead = "" if merges else ", or make it the input_quantizer of each layer that reads it"
    return (
        f"{where(activation)}: its quantizer {activation.quantizer!r} multiplies its codes by a scale, and its outputs"
        f"{through} reach {_names(readers)} away from its chain, where freeze cannot apply that scale; use a quantizer "
        f"without a scale there (e.g. quantized_bits or quantized_relu){instead}"
    )


def _names(layers) -> str:
    return ", ".join(repr(layer.name) for layer in layers)
