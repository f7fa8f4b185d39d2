"""Quantizers' hardware forms as freeze reads them: the one place that lowers a form to a
fixed-point type and integer codes, or refuses it with a sentence naming the layer.

Only the attributes ``kind``, ``type``, ``channels`` and ``parts`` of ``quantizer.hardware()``
are read here.
"""

from __future__ import annotations

import numpy as np
from keras import ops

from .. import quantizers as qz
from .items import FreezeError, where


def hardware(quantizer, layer, which: str):
    """``quantizer.hardware()``, or a FreezeError naming the layer when it has no hardware form."""
    try:
        return quantizer.hardware()
    except (qz.NoHardwareForm, ValueError) as err:
        raise FreezeError(f"{where(layer)}: its {which} cannot be deployed: {err}") from None


def on_declared_grid(layer, which: str, tensor):
    """(type, integer codes) of a quantized weight tensor, checked against the quantizer's grid."""
    hw = hardware(getattr(layer, which), layer, which)
    values = np.asarray(ops.convert_to_numpy(tensor), dtype=np.float64)
    if hw.kind not in ("binary", "fixed") or hw.type is None or not hw.type.contains(values):
        raise FreezeError(
            f"{where(layer)}: its {which} {getattr(layer, which)!r} does not put the "
            f"weights on one fixed-point grid; freeze supports binary and fixed-point weight quantizers for now"
        )
    return hw.type, hw.type.codes(values)


def input_type(layer):
    """The fixed-point type of the model's input: the first layer's ``input_quantizer`` must be
    a plain conversion to one (what the hardware input does)."""
    if layer.input_quantizer is None:
        raise FreezeError(
            f"{where(layer)} is the first layer and needs a fixed-point input_quantizer "
            "(e.g. quantized_bits(8, 0, keep_negative=False)) so inputs lie on a grid"
        )
    hw = hardware(layer.input_quantizer, layer, "input_quantizer")
    if hw.kind != "fixed":
        raise FreezeError(
            f"{where(layer)} is the first layer, but its input_quantizer {layer.input_quantizer!r} "
            f"gives {hw.kind} values, not the plain ap_fixed conversion the hardware input makes; use "
            "quantized_bits or quantized_relu there (e.g. quantized_bits(8, 0, keep_negative=False))"
        )
    return hw.type


def check_requantizer(quantizer, layer, which: str) -> None:
    """Refuse, naming the layer, an activation quantizer whose outputs are not on one fixed grid
    or depend on the statistics of the batch (hardware sees one sample at a time)."""
    if isinstance(quantizer, qz.SteTern) and quantizer.ternary_weight_networks:
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} takes its threshold from the statistics of each batch, which "
            "hardware computing one sample at a time cannot reproduce; use ste_tern with a fixed threshold_value "
            "for activations (ternary_weight_networks is meant for weights)"
        )
    hw = hardware(quantizer, layer, which)
    if hw.kind == "partial" and (hw.parts[1] is None or hw.type is None):
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} leaves the channels outside {list(hw.channels)} real-valued (or "
            "off a fixed grid), which hardware cannot reproduce exactly; give it other= a fixed-point quantizer such "
            "as quantized_bits(8, 3)"
        )
    if hw.type is None:
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} outputs {hw.kind} values that no single fixed-point grid holds "
            "exactly, so freeze cannot derive exact thresholds for it; use a fixed-point, binary or ternary "
            "activation quantizer (e.g. quantized_bits, quantized_relu, ste_sign, ste_tern)"
        )


def per_channel(quantizer) -> bool:
    """The quantizer treats channels differently (a partial form)."""
    return quantizer.hardware().kind == "partial"


def is_conversion(quantizer) -> bool:
    """The quantizer is exactly the conversion to its fixed-point type (hardware may cast)."""
    return quantizer.hardware().kind == "fixed"


def output_type(quantizer):
    """The fixed-point type holding the quantizer's outputs (checked by :func:`check_requantizer`
    or :func:`input_type` before)."""
    return quantizer.hardware().type
