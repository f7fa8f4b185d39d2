"""The first layer's ``input_quantizer`` becomes the model's input step (a plain fixed-point
conversion, else refused)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .. import forms
from ..items import Planning, Quantize, Step


def run(items: Iterable, planning: Planning) -> Iterator:
    """The items, the first :class:`Quantize` replaced by the "input" step."""
    first = True
    for item in items:
        if first and isinstance(item, Quantize):
            first = False
            forms.input_type(item.layer)
            yield Step("input", "input", item.layer, item.quantizer, sources=[item.layer.name])
        else:
            yield item
