"""The model starts with a layer that may start it (a weighted layer whose ``input_quantizer``
sets the input's type: ``lower.starting_layers``): refuse any layer before it, and a model
without one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..items import FreezeError, Layer, Planning, where
from ..lower import starting_layers, starts


def run(items: Iterable[Layer], planning: Planning) -> Iterator[Layer]:
    """The layers, checked to start with a layer whose handler ``STARTS``."""
    started = False
    for item in items:
        if not started:
            if not starts(item.layer):
                raise FreezeError(
                    f"{where(item.layer)} comes before the first {starting_layers()}; the model must start "
                    "with one whose input_quantizer sets the input's fixed-point type"
                )
            started = True
        yield item
    if not started:
        raise FreezeError(f"the model has no {starting_layers()} layer; nothing to freeze")
