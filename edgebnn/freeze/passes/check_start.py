"""The model starts with a layer that may start it (a weighted layer whose ``input_quantizer``
sets the input's type, or a ``QuantActivation``: ``lower.starting_layers``), after nothing but
views and inference no-ops (``Flatten``, ``Reshape``, ``Dropout``, ...: they commute with the
elementwise input quantizer, which passes/input_quantizer puts first); refuse any other layer
before it, and a model without one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..items import FreezeError, Layer, Planning, where
from ..lower import handler_for, noop, reshape, starting_layers, starts, unsupported


def run(items: Iterable[Layer], planning: Planning) -> Iterator[Layer]:
    """The layers, checked to start with a layer whose handler ``STARTS``."""
    if planning.input_type is not None:  # freeze was given the input's type: any layer may start
        yield from items
        return
    started = False
    for item in items:
        if not started:
            if handler_for(item.layer) in (reshape, noop):
                yield item
                continue
            if handler_for(item.layer) is None:  # the real reason (e.g. a float Conv2D stem): no input type helps
                raise unsupported(item.layer)
            if not starts(item.layer):
                raise FreezeError(
                    f"{where(item.layer)} comes before any layer that sets the input's fixed-point type; start the "
                    f"model with a {starting_layers()} that does (a QuantActivation('quantized_bits(8, 0, "
                    "keep_negative=False)') or a layer's input_quantizer), or freeze with input_type='ufixed<8,0>'"
                )
            started = True
        yield item
    if not started:
        raise FreezeError(f"the model has no {starting_layers()} layer; nothing to freeze")
