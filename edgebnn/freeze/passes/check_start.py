"""The model starts with a layer that may start it (a ``QuantDense`` or ``QuantConv2D``, whose
``input_quantizer`` sets the input's type): refuse any layer before it, and a model without one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..items import FreezeError, Layer, Planning, where
from ..lower import starts


def run(items: Iterable[Layer], planning: Planning) -> Iterator[Layer]:
    """The layers, checked to start with a layer whose handler ``STARTS``."""
    started = False
    for item in items:
        if not started:
            if not starts(item.layer):
                raise FreezeError(
                    f"{where(item.layer)} comes before the first QuantDense or QuantConv2D; the model must start "
                    "with one whose input_quantizer sets the input's fixed-point type"
                )
            started = True
        yield item
    if not started:
        raise FreezeError("the model has no QuantDense or QuantConv2D layer; nothing to freeze")
