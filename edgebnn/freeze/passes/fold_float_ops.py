"""The float ops after an accumulator (a float bias, ``BatchNormalization``, an elementwise
activation) and the quantizer that ends them become one requant step; real-valued values
entering a weighted layer without an input quantizer are refused, except a DoReFa
``QuantActivation``'s codes, which a layer that ``reads_codes`` sums before its own scale op. Float biases and
``BatchNormalization`` that end the model become an "affine" step (an exact affine node when
Keras computes them as one, ``passes/affine.py``); any other real-valued end is refused."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import keras

from ...training.layers import QuantActivation, reads_codes
from .. import forms
from ..items import FloatOp, FreezeError, Planning, Quantize, Step, where


def run(items: Iterable, planning: Planning) -> Iterator:
    """Only steps: float ops and their quantizer folded into "requant" steps."""
    pending: list[FloatOp] = []
    became: dict[int, Step] = {}  # id of a Quantize item -> its requant step
    behind = False  # a step came after float ops still pending (e.g. a Flatten at the end)
    names = set()  # of the steps so far
    for item in items:
        if isinstance(item, FloatOp):
            pending.append(item)
        elif isinstance(item, Quantize):
            if item.quantizer is None:  # a weighted layer without an input quantizer
                if len(pending) == 1 and isinstance(pending[0].layer, QuantActivation) and pending[0].scale:
                    source = pending[0].layer
                    if reads_codes(item.layer) is source.quantizer:  # it sums the codes, its scale op divides once
                        pending.clear()
                        continue
                    pad = getattr(item.layer, "pad_values", 0.0)
                    if pad != 0.0 and getattr(item.layer, "padding", "valid") == "same":
                        raise FreezeError(
                            f"{where(item.layer)} sums the scaled outputs of {where(source)}, whose float32 sum depends "
                            f"on the order of the additions, and pads them with pad_values={pad}, which is not a code; "
                            "pad with 0.0 (the layer then sums the codes and applies the scale once after its sum)"
                        )
                    raise FreezeError(
                        f"{where(item.layer)} sums the scaled outputs of {where(source)}, whose float32 sum depends on "
                        f'the order of the additions; give the layer input_quantizer="{source.quantizer!r}" instead (it '
                        "reads the codes and applies the scale once after its sum)"
                    )
                if pending:
                    raise FreezeError(
                        f"{where(item.layer)} receives real-valued inputs from {_names(pending)}; "
                        "give it an input_quantizer or insert a QuantActivation before it"
                    )
                continue
            step = Step(
                item.name,
                "requant",
                item.layer,
                item.quantizer,
                list(pending),
                [op.layer.name for op in pending] + [item.layer.name],
            )
            became[id(item)] = step
            pending.clear()
            scale = forms.activation_scale(item)
            if scale is not None:  # the quantizer's codes are the step's output; its scale comes after
                pending.append(scale)
            names.add(step.name)
            yield step
        else:
            if isinstance(item.moved_from, Quantize):
                item.moved_from = became[id(item.moved_from)]
            behind = behind or bool(pending)
            names.add(item.name)
            yield item
    scales = [op for op in pending if op.scale is not None]
    if scales:
        raise FreezeError(
            f"{scales[-1].scale}, a scale that is not a power of two, and its real-valued products end the model, "
            "which hardware cannot reproduce exactly; add a quantizer after the layer (e.g. "
            "QuantActivation('quantized_bits(8, 3)')) so that freeze folds the scale into its thresholds"
        )
    if pending and not behind and all(op.bias or isinstance(op.layer, keras.layers.BatchNormalization) for op in pending):
        last = pending[-1].layer
        name = last.name if last.name not in names else f"{last.name}_bias"  # a last layer's own float bias
        yield Step(name, "affine", last, None, list(pending), [op.layer.name for op in pending])
    elif pending:
        raise FreezeError(
            f"the model ends with real-valued outputs of {_names(pending)} that hardware cannot "
            "reproduce exactly; end it with a QuantActivation (e.g. quantized_bits(8, 3)) or a QuantDense"
        )


def _names(pending: list[FloatOp]) -> str:
    return ", ".join(op.layer.name for op in pending)
