"""Quantizers' hardware forms as freeze reads them: the one place that lowers a form to a
fixed-point type and integer codes, or refuses it with a sentence naming the layer.

The forms are the typed records of :mod:`edgebnn.forms`. Weights are constants, so any form
whose values lie on its fixed-point type (binary, unipolar, ternary, fixed, grid, po2, and a
partial form whose parts do) is deployed as integer codes of that type; a scaled form is refused
until its scale can be folded into the requantization after it.
"""

from __future__ import annotations

import numpy as np
from keras import ops

from .. import forms
from .. import quantizers as qz
from .items import FreezeError, where

# forms whose values are codes of their type: a weight tensor of one is integers on that grid
_ON_A_GRID = (forms.Binary, forms.Unipolar, forms.Ternary, forms.Fixed, forms.Grid, forms.Po2, forms.Partial)


def hardware(quantizer, layer, which: str):
    """``quantizer.hardware()``, or a FreezeError naming the layer when it has no hardware form."""
    try:
        return quantizer.hardware()
    except (qz.NoHardwareForm, ValueError) as err:
        raise FreezeError(f"{where(layer)}: its {which} cannot be deployed: {err}") from None


def on_declared_grid(layer, which: str, tensor):
    """(type, integer codes) of a quantized weight tensor, checked against the quantizer's grid."""
    quantizer = getattr(layer, which)
    hw = hardware(quantizer, layer, which)
    values = np.asarray(ops.convert_to_numpy(tensor), dtype=np.float64)
    if isinstance(hw, forms.Scaled):
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} multiplies the weights by a scale{_scale_text(hw)}, which "
            f"freeze cannot deploy yet; use a {which} without a scale (e.g. ste_sign, ste_tern, or quantized_bits "
            "without alpha)"
        )
    if isinstance(hw, forms.Partial) and hw.type is None:
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} leaves the channels outside {list(hw.channels)} off a "
            f"fixed-point grid (real-valued or scaled), which freeze cannot deploy yet; give it other= a quantizer "
            "without a scale, such as quantized_bits(4, 0)"
        )
    if not isinstance(hw, _ON_A_GRID) or not hw.type.contains(values):
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} gave weights off its grid {hw.type}; please report this "
            "to edgebnn with the model"
        )
    return hw.type, hw.type.codes(values)


def _scale_text(hw) -> str:
    """`` (per channel)``, `` (one per tensor)`` or `` (0.333)``: how a scaled form scales."""
    if hw.scale is None or isinstance(hw.scale, tuple):
        return " per channel" if hw.axis is not None else " computed from the tensor"
    return f" ({hw.scale:g})"


def input_type(layer):
    """The fixed-point type of the model's input: the first layer's ``input_quantizer`` must be
    a plain conversion to one (what the hardware input does)."""
    if layer.input_quantizer is None:
        raise FreezeError(
            f"{where(layer)} is the first layer and needs a fixed-point input_quantizer "
            "(e.g. quantized_bits(8, 0, keep_negative=False)) so inputs lie on a grid"
        )
    hw = hardware(layer.input_quantizer, layer, "input_quantizer")
    if not isinstance(hw, forms.Fixed):
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
    if isinstance(hw, forms.Scaled):
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} multiplies its outputs by a scale{_scale_text(hw)}, so they "
            "lie on no fixed-point grid and freeze cannot derive exact thresholds for them yet; use an unscaled "
            "quantizer (e.g. quantized_relu(2) instead of DoReFa, or quantized_bits without alpha)"
        )
    if isinstance(hw, forms.Partial) and (hw.rest is None or hw.type is None):
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
    return isinstance(quantizer.hardware(), forms.Partial)


def is_conversion(quantizer) -> bool:
    """The quantizer is exactly the conversion to its fixed-point type (hardware may cast)."""
    return isinstance(quantizer.hardware(), forms.Fixed)


def output_type(quantizer):
    """The fixed-point type holding the quantizer's outputs (checked by :func:`check_requantizer`
    or :func:`input_type` before)."""
    return quantizer.hardware().type
