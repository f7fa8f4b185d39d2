"""``BatchNormalization`` (channel axis only): one float op, as the layer computes it at
inference."""

from __future__ import annotations

from collections.abc import Iterator

from ..items import FloatOp, FreezeError, Layer, where

LABEL = "BatchNormalization"


def lower(source: Layer) -> Iterator:
    """Its float op (per channel: it does not commute with a Flatten)."""
    layer = source.layer
    if layer.axis not in (-1, len(layer.input.shape) - 1):
        raise FreezeError(f"{where(layer)} normalizes axis {layer.axis}; only the channel axis (-1) is supported")
    yield FloatOp(layer.name, lambda x, l=layer: l(x, training=False), layer=layer, per_channel=True)
