"""A ``Flatten``, ``Reshape``, ``MaxPooling2D`` or ``MaxPooling1D`` (also a global one) met between
an accumulator and its quantizer moves after the quantizer.

A reshape commutes with elementwise ops, so the thresholds stay per channel instead of per
flattened feature; one that mixes channels (``lower.reshape.mixes_channels``) must not meet a
per-channel float op (BatchNormalization) or a per-channel quantizer after it. A maxpool
commutes only when the requantization is monotone in the order of the float ops before the
pool: the moved pool step keeps how many float ops ran before it (``ops_before``) and refers to
the quantizer (``moved_from``, which passes/fold_float_ops replaces by the requant step) for
passes/check_pool_move.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .. import forms
from ..items import FloatOp, FreezeError, Planning, Quantize, Step, where
from ..lower import reshape

MOVED = ("flatten", "reshape", "maxpool2d", "maxpool1d", "pool_pad2d", "pool_pad1d")  # a "same" max pool's pad too
MAXPOOLS = ("maxpool2d", "maxpool1d")
VIEWS = ("flatten", "reshape")


def run(items: Iterable, planning: Planning) -> Iterator:
    """The items, each flatten / reshape / maxpool step among float ops yielded after their quantizer."""
    pending: list[FloatOp] = []  # float ops since the last accumulator
    deferred: list[Step] = []
    for item in items:
        if isinstance(item, FloatOp):
            flats = [d for d in deferred if d.kind in VIEWS and reshape.mixes_channels(d)]
            if flats and item.per_channel:
                raise FreezeError(
                    f"{where(item.layer)} normalizes the flattened real-valued outputs of {_names(pending)}; "
                    f"quantize before {_layer(flats[0])} or normalize before it"
                )
            pending.append(item)
            yield item
        elif isinstance(item, Step) and item.kind in MOVED and pending:
            if item.kind in MAXPOOLS:
                item.ops_before = len(pending)
            deferred.append(item)
        elif isinstance(item, Quantize) and item.quantizer is not None:
            flats = [d for d in deferred if d.kind in VIEWS and reshape.mixes_channels(d)]
            if flats and forms.per_channel(item.quantizer):
                raise FreezeError(
                    f"{where(item.layer)}: its {item.which} {item.quantizer!r} treats the features of the flattened "
                    f"tensor differently, but the real-valued outputs of {_names(pending)} before "
                    f"{_layer(flats[0])} can only be requantized per channel; quantize "
                    f"before the {reshape.label(flats[0])} (e.g. a QuantActivation) or use one quantizer for all features"
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


def _layer(step: Step) -> str:
    """How a refusal names the layer of a flatten or reshape step: the layer by the step, a global
    pool (whose flatten step has a name of its own) by the pool layer and its class."""
    if step.name == step.layer.name:
        return f"{step.name!r} ({reshape.label(step)})"
    return f"{step.layer.name!r} ({type(step.layer).__name__})"


def _names(pending: list[FloatOp]) -> str:
    return ", ".join(op.layer.name for op in pending)
