"""``GlobalMaxPooling2D`` and ``GlobalAveragePooling2D`` (channels_last): a pool over the whole
(H, W) input, then with ``keepdims=False`` a flatten of the (1, 1, C) result.

The pool is the one of the matching windowed layer (``pooling``, ``avgpool``) with the window
(H, W): a maxpool2d step (moved after a quantizer that follows, as for MaxPooling2D), an
avgpool2d step for ``H * W`` a power of two, else a sumpool2d step and its division. The
flatten of one position keeps the channels, so per-channel float ops may follow it.
"""

from __future__ import annotations

from collections.abc import Iterator

import keras

from ..items import Layer, Step
from . import avgpool, pooling

LABEL = "GlobalMaxPooling2D, GlobalAveragePooling2D"


def lower(source: Layer) -> Iterator:
    """The pool's items, then a flatten step unless ``keepdims``."""
    layer = source.layer
    if isinstance(layer, keras.layers.GlobalAveragePooling2D):
        avgpool.check(layer)
        yield from avgpool.steps(layer)
    else:
        pooling.check(layer)
        yield Step(layer.name, pooling.KIND, layer, sources=[layer.name])
    if not layer.keepdims:
        yield Step(f"{layer.name}_flatten", "flatten", layer, sources=[layer.name])
