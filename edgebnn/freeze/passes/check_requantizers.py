"""Every quantizer that ends float ops (a ``QuantActivation``, a later layer's
``input_quantizer``) has outputs on one fixed grid that hardware can reproduce."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .. import forms
from ..items import Planning, Quantize


def run(items: Iterable, planning: Planning) -> Iterator:
    """The items unchanged; refuses a requantizer without an exact hardware form."""
    for item in items:
        if isinstance(item, Quantize) and item.quantizer is not None:
            forms.check_requantizer(item.quantizer, item.layer, item.which)
        yield item
