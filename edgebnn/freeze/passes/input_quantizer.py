"""The model's input step: the first quantizer (a weighted layer's ``input_quantizer`` or a
leading ``QuantActivation``, which must be a plain fixed-point conversion), or, with
``freeze(input_type=...)``, a conversion to that type before the first layer (a float first
layer, larq's usual stem; or a first quantizer that is no plain conversion, which then
requantizes the converted input). Views and no-ops before it (a leading ``Flatten`` / ``Reshape``)
follow the input step: the conversion is elementwise, so it commutes with them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .. import forms
from ..items import FreezeError, Planning, Quantize, Step, where


def run(items: Iterable, planning: Planning) -> Iterator:
    """The items with the "input" step first: the first :class:`Quantize` replaced by it, or
    (``planning.input_type``) one made from the type."""
    items = iter(items)
    if planning.input_type is not None:
        yield from _given(items, planning)
        return
    before = []  # the views before the first quantizer
    for item in items:
        if isinstance(item, Quantize):
            forms.input_type(item)
            yield Step("input", "input", item.layer, item.quantizer, sources=[item.layer.name])
            yield from before
            yield from items
            return
        before.append(item)
    yield from before


def _given(items: Iterator, planning: Planning) -> Iterator:
    """The input step of the given type, then the items; the first layer must not quantize its
    input itself (two input types)."""
    from ...training.quantizers import QuantizedBits

    t = planning.input_type
    quantizer = QuantizedBits(t.width, t.integer - t.signed, keep_negative=t.signed, rounding=t.rounding, overflow=t.overflow)
    first = next(items, None)
    if first is None:
        return
    if isinstance(first, Quantize) and first.quantizer is not None and _plain(first):
        raise FreezeError(
            f"{where(first.layer)} sets the input's type with its {first.which} {first.quantizer!r}, and freeze was "
            f"given input_type={str(t)!r} too; give only one of them"
        )
    yield Step("input", "input", first.layer, quantizer, sources=[first.layer.name])
    # the first layer reads the input as it is, or requantizes it (a quantizer that is no plain
    # conversion, e.g. QKeras's quantized_relu_po2 on the input: thresholds on the given type)
    if not isinstance(first, Quantize) or first.quantizer is not None:
        yield first
    yield from items


def _plain(item: Quantize) -> bool:
    """The quantizer is a plain conversion to a fixed-point type (what the input step does)."""
    try:
        forms.input_type(item)
    except FreezeError:
        return False
    return True
