"""Lowering: one handler per Keras layer family turns a layer into raw items (see
``freeze/items.py``); :data:`HANDLERS` is the table, looked up along the layer class's MRO.

A handler is a generator ``lower(source: Layer) -> Iterator[item]`` that checks the layer
(raising a FreezeError that names it) and yields its items in the layer's order: for a
weighted layer its input :class:`Quantize` (quantizer or None), its accumulator
:class:`Step`, then :class:`FloatOp` items. ``starts``: a layer of this family may start the
model (it has an ``input_quantizer`` giving the input's type).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator

import keras

from ...layers import QuantActivation, QuantConv2D, QuantDense
from ..items import FreezeError, Layer, where
from . import activation, batchnorm, conv2d, dense, noop, pooling, reshape


@dataclasses.dataclass(frozen=True)
class Handler:
    """How one Keras layer family is lowered; ``label`` names it in the supported-layers sentence."""

    lower: Callable[[Layer], Iterator]
    label: str
    starts: bool = False


HANDLERS: dict[type, Handler] = {
    QuantDense: Handler(dense.lower, "QuantDense", starts=True),
    QuantConv2D: Handler(conv2d.lower, "QuantConv2D", starts=True),
    keras.layers.BatchNormalization: Handler(batchnorm.lower, "BatchNormalization"),
    QuantActivation: Handler(activation.lower_quantizer, "QuantActivation"),
    keras.layers.Activation: Handler(activation.lower, "elementwise Activation"),
    keras.layers.MaxPooling2D: Handler(pooling.lower, "MaxPooling2D"),
    keras.layers.Flatten: Handler(reshape.lower, "Flatten"),
    keras.layers.Dropout: Handler(noop.lower, "Dropout"),
}


def handler_for(layer) -> Handler | None:
    """The handler of the layer's class or of its nearest base class in the table."""
    for cls in type(layer).__mro__:
        if cls in HANDLERS:
            return HANDLERS[cls]
    return None


def unsupported(layer) -> FreezeError:
    """The error for a layer no handler lowers."""
    labels = [h.label for h in HANDLERS.values()]
    return FreezeError(f"{where(layer)} cannot be frozen; supported layers are {', '.join(labels[:-1])} "
                       f"and {labels[-1]}")


def run(items: Iterable, planning) -> Iterator:
    """The lowering pass: each :class:`Layer` becomes its handler's items."""
    for item in items:
        if not isinstance(item, Layer):
            yield item
            continue
        handler = handler_for(item.layer)
        if handler is None:
            raise unsupported(item.layer)
        yield from handler.lower(item)
