"""``QuantActivation``: a quantizer that ends the float ops before it; as the model's first layer
(QKeras's ``QActivation`` on the input) it sets the input's fixed-point type."""

from __future__ import annotations

from collections.abc import Iterator

from ..items import Layer, Quantize

LABEL = "QuantActivation"
STARTS = True


def lower(source: Layer) -> Iterator:
    """Its quantizer (passes/fold_float_ops folds the float ops before it into one step)."""
    layer = source.layer
    yield Quantize(layer, layer.quantizer, "quantizer", layer.name)
