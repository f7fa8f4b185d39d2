"""The layers that are the identity at inference, so nothing: ``Dropout`` (and ``SpatialDropout1D``
/ ``2D`` / ``3D``, its subclasses), ``GaussianNoise``, ``GaussianDropout``, ``AlphaDropout`` (they
act only when Keras calls them with ``training=True``), ``ActivityRegularization`` (it adds a loss,
never changes its input) and ``Identity``."""

from __future__ import annotations

from collections.abc import Iterator

from ..items import Layer

LABEL = (
    "the inference no-ops (Dropout, SpatialDropout, GaussianNoise, GaussianDropout, AlphaDropout, "
    "ActivityRegularization, Identity)"
)


def lower(source: Layer) -> Iterator:
    """No items."""
    return iter(())
