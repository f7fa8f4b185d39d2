"""Lowering: one handler module per Keras layer family turns a layer into raw items (see
``freeze/items.py``); :data:`HANDLERS` is the table, looked up along the layer class's MRO.

A handler module has

- ``lower(source: Layer) -> Iterator[item]``: a generator that checks the layer (raising a
  FreezeError that names it) and yields its items in the layer's order (a weighted layer: its
  input :class:`Quantize`, quantizer or None, its accumulator :class:`Step`, then
  :class:`FloatOp` items);
- ``LABEL``: how the supported-layers sentence names the family;
- ``STARTS = True`` when a layer of the family may start the model (its ``input_quantizer``
  sets the input's type);
- for a family whose steps are its own (``Step.kind == KIND``): ``KIND``,
  ``keras_eval(step, x)`` (how Keras computes the step) and ``node(step, freezing)`` (its
  graph node); ``EXTRA_KINDS`` (kind -> (keras_eval, node)) for its other step kinds;
  ``freeze/kinds.py`` collects them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from types import ModuleType

import keras

from ...training.layers import QuantActivation, QuantConv1D, QuantConv2D, QuantDense, QuantDepthwiseConv2D, QuantSeparableConv2D
from ..items import FreezeError, Layer, NotLowered, Read, Wrote, where
from . import (
    activation,
    add,
    avgpool,
    avgpool1d,
    batchnorm,
    concatenate,
    conv1d,
    conv2d,
    dense,
    depthwise,
    global_pool,
    maxpool1d,
    noop,
    pooling,
    quant_activation,
    reshape,
    separable,
    zero_padding,
    zeropad1d,
)

HANDLERS: dict[type, ModuleType] = {
    QuantDense: dense,
    QuantConv2D: conv2d,
    keras.layers.BatchNormalization: batchnorm,
    QuantActivation: quant_activation,
    keras.layers.Activation: activation,
    keras.layers.MaxPooling2D: pooling,
    keras.layers.AveragePooling2D: avgpool,
    keras.layers.Flatten: reshape,
    keras.layers.Dropout: noop,
    QuantDepthwiseConv2D: depthwise,
    QuantSeparableConv2D: separable,
    QuantConv1D: conv1d,
    keras.layers.MaxPooling1D: maxpool1d,
    keras.layers.GlobalMaxPooling1D: maxpool1d,
    keras.layers.AveragePooling1D: avgpool1d,
    keras.layers.GlobalAveragePooling1D: avgpool1d,
    keras.layers.ZeroPadding1D: zeropad1d,
    keras.layers.Add: add,
    keras.layers.Concatenate: concatenate,
    keras.layers.GlobalMaxPooling2D: global_pool,
    keras.layers.GlobalAveragePooling2D: global_pool,
    keras.layers.Reshape: reshape,
    keras.layers.ZeroPadding2D: zero_padding,
    keras.layers.GaussianNoise: noop,
    keras.layers.GaussianDropout: noop,
    keras.layers.AlphaDropout: noop,
    keras.layers.ActivityRegularization: noop,
    keras.layers.Identity: noop,
}


def handler_for(layer) -> ModuleType | None:
    """The handler of the layer's class or of its nearest base class in the table."""
    for cls in type(layer).__mro__:
        if cls in HANDLERS:
            return HANDLERS[cls]
    return None


def starts(layer) -> bool:
    """A layer of this family may start the model."""
    return getattr(handler_for(layer), "STARTS", False)


def starting_layers() -> str:
    """The layer classes that may start a model, as words: "QuantDense, ... or QuantConv2D"."""
    labels = list(dict.fromkeys(h.LABEL for h in HANDLERS.values() if getattr(h, "STARTS", False)))
    return f"{', '.join(labels[:-1])} or {labels[-1]}"


# Keras's float layers and the edgebnn layer that quantizes the same computation
QUANTIZED_COUNTERPART = {
    "Dense": "QuantDense",
    "Conv1D": "QuantConv1D",
    "Conv2D": "QuantConv2D",
    "DepthwiseConv2D": "QuantDepthwiseConv2D",
    "SeparableConv2D": "QuantSeparableConv2D",
}


def unsupported(layer) -> FreezeError:
    """The error for a layer no handler lowers: for a Keras float layer with weights, the edgebnn
    layer to use instead; else the supported layers."""
    counterpart = QUANTIZED_COUNTERPART.get(type(layer).__name__)
    if counterpart is not None:
        return FreezeError(
            f"{where(layer)} has float weights, which cannot be deployed bit for bit; use edgebnn.layers.{counterpart} "
            "with a kernel_quantizer (e.g. 'ste_sign', or 'quantized_bits(8, 0, alpha=1)' for a layer kept near full "
            "precision) and train again"
        )
    labels = list(dict.fromkeys(h.LABEL for h in HANDLERS.values()))  # a family may handle several classes
    return FreezeError(f"{where(layer)} cannot be frozen; supported layers are {', '.join(labels[:-1])} and {labels[-1]}")


def run(items: Iterable, planning) -> Iterator:
    """The lowering pass: each :class:`Layer` becomes its handler's items; in a branching model
    a :class:`Read` comes first where the layer does not read (only) the layer before it, and a
    :class:`Wrote` after them (passes/branches follows the data flow by them)."""
    previous = None
    for item in items:
        if not isinstance(item, Layer):
            yield item
            continue
        handler = handler_for(item.layer)
        if handler is None:
            raise unsupported(item.layer)
        if item.inputs is not None and previous is not None and item.inputs != [previous]:
            yield Read(item.layer, item.inputs)
        try:
            yield from handler.lower(item)
        except NotLowered as signal:
            raise unsupported(signal.layer) from None
        if item.inputs is not None:
            yield Wrote(item.layer, item.readers)
        previous = item.layer
