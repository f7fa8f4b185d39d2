"""With ``strip_softmax``, the softmax that ends the model is left out: a trailing softmax
layer is dropped, a trailing ``QuantDense`` is lowered without its activation (its logits)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from ...training.layers import QuantDense
from ..chain import trailing_softmax
from ..items import Layer, Planning


def run(items: Iterable[Layer], planning: Planning) -> Iterator[Layer]:
    """The layers, the trailing softmax left out; records its layer in ``planning.stripped``."""
    items = list(items)
    index = trailing_softmax([item.layer for item in items]) if planning.strip_softmax else None
    for i, item in enumerate(items):
        if i != index:
            yield item
            continue
        planning.stripped = item.layer
        if isinstance(item.layer, QuantDense):
            yield dataclasses.replace(item, logits=True)
