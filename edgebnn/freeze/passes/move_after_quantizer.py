"""A ``Flatten``, ``MaxPooling2D`` or ``MaxPooling1D`` met between an accumulator and its quantizer moves after
the quantizer.

A reshape commutes with elementwise ops, so the thresholds stay per channel instead of per
flattened feature; it must not meet a per-channel float op (BatchNormalization) or a
per-channel quantizer after it, unless it flattens a single position (the flatten of a global
pool), where features are channels. A maxpool commutes only when the requantization is monotone
in the order of the float ops before the pool: the moved pool step keeps how many float ops
ran before it (``ops_before``) and refers to the quantizer (``moved_from``, which
passes/fold_float_ops replaces by the requant step) for passes/check_pool_move.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .. import forms
from ..items import FloatOp, FreezeError, Planning, Quantize, Step, where

MOVED = ("flatten", "maxpool2d", "maxpool1d")
MAXPOOLS = ("maxpool2d", "maxpool1d")


def run(items: Iterable, planning: Planning) -> Iterator:
    """The items, each flatten / maxpool step among float ops yielded after their quantizer."""
    pending: list[FloatOp] = []  # float ops since the last accumulator
    deferred: list[Step] = []
    for item in items:
        if isinstance(item, FloatOp):
            flats = [d for d in deferred if _mixes(d)]
            if flats and item.per_channel:
                raise FreezeError(
                    f"{where(item.layer)} normalizes the flattened real-valued outputs of {_names(pending)}; "
                    f"quantize before {flats[0].name!r} (Flatten) or normalize before it"
                )
            pending.append(item)
            yield item
        elif isinstance(item, Step) and item.kind in MOVED and pending:
            if item.kind in MAXPOOLS:
                item.ops_before = len(pending)
            deferred.append(item)
        elif isinstance(item, Quantize) and item.quantizer is not None:
            flats = [d for d in deferred if _mixes(d)]
            if flats and forms.per_channel(item.quantizer):
                raise FreezeError(
                    f"{where(item.layer)}: its {item.which} {item.quantizer!r} treats the features of the flattened "
                    f"tensor differently, but the real-valued outputs of {_names(pending)} before "
                    f"{flats[0].name!r} (Flatten) can only be requantized per channel; quantize before the Flatten "
                    "(e.g. a QuantActivation) or use one quantizer for all features"
                )
            yield item
            for moved in deferred:
                if moved.kind in MAXPOOLS:
                    moved.moved_from = item
                yield moved
            pending.clear()
            deferred.clear()
        else:
            yield item
    yield from deferred  # real-valued outputs end the model: passes/fold_float_ops refuses them


def _mixes(step: Step) -> bool:
    """A flatten step whose features are not its input's channels (it flattens more than one position)."""
    return step.kind == "flatten" and step.layer.output.shape[-1] != step.layer.input.shape[-1]


def _names(pending: list[FloatOp]) -> str:
    return ", ".join(op.layer.name for op in pending)
