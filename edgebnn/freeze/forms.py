"""Quantizers' hardware forms as freeze reads them: the one place that lowers a form to a
fixed-point type and integer codes, or refuses it with a sentence naming the layer.

The forms are the typed records of :mod:`edgebnn.forms`. Weights are constants, so any form
whose values lie on its fixed-point type (binary, unipolar, ternary, fixed, grid, po2, and a
partial form whose parts do) is deployed as integer codes of that type.

A scaled kernel (per tensor or per output channel; any quantizer attribute: ``kernel_quantizer``,
``depthwise_quantizer``, ``pointwise_quantizer``) is deployed as the integer codes of its base
form; the layer applies the scale once after the sum (``layers``), so freeze either shifts the
codes onto a finer grid (every scale a power of two: exact, no float op) or lowers the scale as a
float op after the accumulator (:func:`folds_scale`), which the next quantizer's thresholds
replay. A separable layer's per-channel depthwise scale sits between its two sums: it is shifted
into the depthwise codes when it is a power of two, and refused otherwise.

A scaled activation quantizer with a constant per-tensor scale (DoReFa's ``1/(2**k-1)``,
QKeras's numeric ``alpha``) is deployed as its codes: as a layer's ``input_quantizer`` the
layer's own scale op applies the scale, as a ``QuantActivation`` a float op after its codes does
(:func:`activation_scale`).
"""

from __future__ import annotations

import numpy as np
from keras import ops

from .. import forms
from ..fixed import FixedType
from ..training import quantizers as qz
from ..training.layers import splits_input, sums_exactly
from .items import FloatOp, FreezeError, where

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


def _numpy(tensor):
    return None if tensor is None else np.asarray(ops.convert_to_numpy(tensor), dtype=np.float64)


def _is_po2(scale) -> bool:
    """Every scale a positive power of two (a shift of the grid)."""
    s = np.atleast_1d(scale)
    return bool(np.all(s > 0) and np.all(np.frexp(s)[0] == 0.5))


def folds_scale(layer) -> bool:
    """The layer multiplies its accumulator by a scale that is not a shift of the grid: an input
    scale, or a kernel scale after the sum that is not a power of two. Freeze then lowers the
    accumulator on the codes and a float op "times the scales" after it (before bias and
    activation)."""
    s_in, kernel_scales = layer.output_scales()
    return s_in is not None or any(not _is_po2(_numpy(s)) for _, s in kernel_scales)


# how a scale op names the kernel of each quantizer attribute
_KERNEL_NAMES = {
    "kernel_quantizer": "kernel",
    "depthwise_quantizer": "depthwise kernel",
    "pointwise_quantizer": "pointwise kernel",
}


def scale_op(layer) -> FloatOp:
    """The float op of a layer whose scales :func:`folds_scale`: its accumulator times its
    scales, as the layer's ``call`` computes it."""
    s_in, kernel_scales = layer.output_scales()
    text = [f"its {_KERNEL_NAMES[which]} scale {_values_text(_numpy(s))}" for which, s in kernel_scales]
    if s_in is not None:
        which = "input_quantizer" if layer.input_quantizer is not None else "input's quantizer"
        text.append(f"the scale {_values_text(_numpy(s_in))} of its {which} {layer._input_scaler()!r}")
    return FloatOp(
        f"{layer.name}.scale",
        lambda x, l=layer: l.rescale(x),
        layer=layer,
        per_channel=any(np.size(_numpy(s)) > 1 for _, s in kernel_scales),
        scale=f"{where(layer)} multiplies its sums by {' and '.join(text)}",
    )


def _values_text(s) -> str:
    s = np.ravel(s)
    return f"{s[0]:g}" if s.size == 1 else f"({', '.join(f'{v:g}' for v in s[:4])}{', ...' if s.size > 4 else ''})"


def codes_after_sum(layer, which: str) -> bool:
    """The kernel of the quantizer attribute ``which`` enters the accumulator as its unscaled
    codes: the layer applies its scale after the sum and freeze folds that scale (a power of
    two, or a scale between two sums, is shifted into the codes instead)."""
    return which in dict(layer.output_scales()[1]) and folds_scale(layer)


def kernel(layer, which: str = "kernel_quantizer"):
    """(type, integer codes) of the kernel that the quantizer attribute ``which`` reads, as the
    accumulator multiplies it: the quantized kernel on its grid; for a scaled kernel its codes,
    on the grid shifted by the scale when the scale is a power of two and the codes do not stay
    unscaled (:func:`codes_after_sum`)."""
    quantizer = getattr(layer, which)
    hw = hardware(quantizer, layer, which)
    if isinstance(hw, forms.Partial) and hw.type is None and hw.rest is not None:
        return _shifted_product(layer, which)  # a scaled part: the layer multiplies the kernel as it is
    if not isinstance(hw, forms.Scaled):
        return on_declared_grid(layer, which, layer.quantized_weight(which))
    values, scale = layer.split_weight(which)
    if scale is None:  # the layer keeps the plain product: a scale along an axis the sum runs over
        return _shifted_product(layer, which)
    values, scale = _numpy(values), _numpy(scale)
    base = hw.base.type
    if not base.contains(values):
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} gave weight codes off its grid {base}; please report "
            "this to edgebnn with the model"
        )
    if codes_after_sum(layer, which):
        return base, base.codes(values)
    if not _is_po2(scale):  # only a scale between two sums (the layer applies every other one after)
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} scales each depthwise channel by {_values_text(scale)}, "
            "between the depthwise and the pointwise sums, which freeze can deploy only as powers of two; use one "
            "scale per tensor (e.g. xnor_sign(axis=None)) or power-of-two scales (e.g. xnor_sign(po2=True))"
        )
    exps = np.frexp(np.atleast_1d(scale))[1] - 1  # scale = 2**exps exactly, broadcast on the kernel
    codes = base.codes(values).astype(np.int64) << (exps - exps.min())
    t = FixedType.for_codes(int(codes.min()), int(codes.max()), base.lsb_exp + int(exps.min()))
    return t.replace(rounding="RND_CONV", overflow="SAT"), codes


# the widest kernel codes a shifted product may need: a power-of-two scale span of about 30 octaves
MAX_SHIFTED_BITS = 32
# ... and a layer that sums exactly (``layers.sums_exactly``): float32 scales of 24 significant
# bits a few octaves apart; the sum's own bound (below 2**53, ``passes/float32_exactness``) decides
MAX_EXACT_SUM_BITS = 52


def _scales(hw) -> list:
    """The scale values of every scaled part of the form ``hw`` (a quantizer's ``hardware(x)``)."""
    if isinstance(hw, forms.Scaled):  # (a part of no channels has no scale)
        return [] if hw.scale is None else [np.atleast_1d(np.asarray(hw.scale, dtype=np.float64)).ravel()]
    if isinstance(hw, forms.Partial):
        return [s for part in hw.parts if part is not None for s in _scales(part)]
    return []


def _is_scaled(quantizer) -> bool:
    return quantizer is not None and isinstance(quantizer.hardware(), forms.Scaled)


def po2_spelling(quantizer) -> str | None:
    """The quantizer with power-of-two scales, as the user would write it (None when unknown)."""
    if isinstance(quantizer, qz.XnorSign):
        return repr(qz.XnorSign(**{**quantizer.get_config(), "po2": True}))
    if getattr(quantizer, "alpha", None) == "auto":
        return repr(type(quantizer).from_config({**quantizer.get_config(), "alpha": "auto_po2"}))
    if isinstance(quantizer, qz.PartialQuantizer):
        parts = [(p, po2_spelling(p) if _is_scaled(p) else None) for p in (quantizer.quantizer, quantizer.other)]
        if any(_is_scaled(p) and fix is None for p, fix in parts):
            return None
        (q, fq), (o, fo) = parts
        return repr(qz.PartialQuantizer(fq or q, quantizer.channels, quantizer.axis, fo or o))
    return None


def _shifted_product(layer, which: str):
    """(type, integer codes) of a kernel whose scales vary along an axis the layer sums over (an
    XNOR scale per input channel, a partial kernel with a scaled part): the layer multiplies the
    quantized kernel as it is, and every scale a power of two (or 0) makes each weight
    ``code * 2**lsb`` exactly, on the finest grid of them all. The accumulator then sums integers,
    in any order, as Keras's float32 sum does while it stays below 2**24 (the float32 exactness
    check). Other scales make each weight an exact float32 value too, on a finer grid: a layer
    that :func:`~edgebnn.training.layers.sums_exactly` sums them in float64 without rounding and rounds
    once to float32, which the next quantizer's thresholds replay; in a layer that does not (its
    scales are declared powers of two) they are refused."""
    quantizer = getattr(layer, which)
    hw = quantizer.hardware(layer._weight(which))
    scales = np.concatenate(_scales(hw) or [np.zeros(0)])
    off = scales[(scales != 0) & ~((scales > 0) & (np.frexp(scales)[0] == 0.5))]
    exact = sums_exactly(layer)
    if off.size and not exact:
        axis = (
            f"along axis {hw.axis}" if isinstance(hw, forms.Scaled) else f"on the channels {list(hw.channels)} of axis {hw.axis}"
        )
        fix = po2_spelling(quantizer) or "power-of-two scales (po2=True, alpha='auto_po2')"
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} scales the weights {axis}, which the layer sums over, by "
            f"{_values_text(off)}: not powers of two, so the products round in float32 and no fixed-point sum "
            f"equals Keras's; use {fix}, or scale "
            "per output channel (the last axis) or per tensor"
        )
    values = _numpy(layer.quantized_weight(which))
    nonzero = values[values != 0]
    if not nonzero.size:
        return FixedType.for_codes(0, 0, 0).replace(rounding="RND_CONV", overflow="SAT"), np.zeros(values.shape, np.int64)
    mantissa, exponent = np.frexp(nonzero)
    ints = np.ldexp(np.abs(mantissa), 53).astype(np.int64)  # exact: a float has at most 53 significant bits
    lsb = int(np.min(exponent - 53 + np.log2(ints & -ints).astype(np.int64)))  # the lowest set bit of them all
    span = float(np.max(np.abs(nonzero))) * 2.0**-lsb
    bits = MAX_EXACT_SUM_BITS if exact else MAX_SHIFTED_BITS
    if span >= 2.0 ** (bits - 1):
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} gives weights from {np.min(np.abs(nonzero)):g} to "
            f"{np.max(np.abs(nonzero)):g}, whose codes on one grid need more than {bits} bits (a slice of "
            "nearly-zero weights gives a tiny scale); leave such a slice out of the scaled channels or retrain so that "
            "its weights are not all near zero"
        )
    codes = np.ldexp(values, -lsb).astype(np.int64)
    t = FixedType.for_codes(int(codes.min()), int(codes.max()), lsb)
    return t.replace(rounding="RND_CONV", overflow="SAT"), codes


def activation_scale(item) -> FloatOp | None:
    """A scaled quantizer ending float ops (``item``: a Quantize) is deployed as its codes; the
    float op that applies its scale after them (a ``QuantActivation``), or None (unscaled, or a
    layer's ``input_quantizer`` whose scale the layer's own scale op applies). A scaled input the
    layer cannot apply after its sum is refused."""
    quantizer = item.quantizer
    if not isinstance(quantizer.hardware(), forms.Scaled):
        return None
    if item.which == "input_quantizer":
        if splits_input(item.layer):
            return None
        if quantizer.hardware().axis is not None:
            raise FreezeError(
                f"{where(item.layer)}: its input_quantizer {quantizer!r} scales each input channel differently, along "
                "the sum, so the scale cannot be applied after it; give the alpha as one number"
            )
        raise FreezeError(
            f"{where(item.layer)}: its input_quantizer {quantizer!r} scales its codes and the layer pads with "
            f"pad_values={item.layer.pad_values}, not 0.0, so it cannot sum the codes and apply the scale after; pad "
            "with 0.0 or use an unscaled input_quantizer"
        )
    s = quantizer.split(ops.zeros((1,)))[1]
    if np.size(_numpy(s)) > 1 or np.any(_numpy(s) <= 0):
        raise FreezeError(
            f"{where(item.layer)}: its {item.which} {quantizer!r} scales its codes by {_values_text(_numpy(s))}; as a "
            "QuantActivation freeze deploys only one positive scale per tensor (it commutes with pooling and "
            "reshapes); give the alpha as one positive number or make the quantizer the next layer's input_quantizer"
        )
    return FloatOp(
        f"{item.layer.name}.scale",
        lambda x, q=quantizer, s=s: q.rescale(x, s),
        layer=item.layer,
        scale=f"{where(item.layer)} scales the codes of its {item.which} {quantizer!r}",
    )


def codes_of(quantizer, x):
    """The quantizer's output as the graph holds it: its codes (unscaled values) for a scaled
    form, else ``q(x)`` (at inference)."""
    if isinstance(quantizer.hardware(), forms.Scaled):
        return quantizer.split(x, training=False)[0]
    return quantizer(x, training=False)


def _scale_text(hw) -> str:
    """`` (per channel)``, `` (one per tensor)`` or `` (0.333)``: how a scaled form scales."""
    if hw.scale is None or isinstance(hw.scale, tuple):
        return " per channel" if hw.axis is not None else " computed from the tensor"
    return f" ({hw.scale:g})"


def input_type(item):
    """The fixed-point type of the model's input: the first quantizer (:class:`Quantize` item: a
    weighted layer's ``input_quantizer``, a leading ``QuantActivation``'s ``quantizer``) must be
    a plain conversion to one (what the hardware input does)."""
    layer, quantizer, which = item.layer, item.quantizer, item.which
    if quantizer is None:
        raise FreezeError(
            f"{where(layer)} is the first layer and reads floats: give it a fixed-point input_quantizer "
            "(e.g. quantized_bits(8, 0, keep_negative=False)), start the model with such a QuantActivation, or "
            "freeze with the data's type (input_type='ufixed<8,0>'; edgebnn.propose_input_type(x) finds it)"
        )
    hw = hardware(quantizer, layer, which)
    if not isinstance(hw, forms.Fixed):
        raise FreezeError(
            f"{where(layer)} is the first layer, but its {which} {quantizer!r} gives {hw.kind} values, not the plain "
            "ap_fixed conversion the hardware input makes; freeze with the data's type (input_type='ufixed<8,0>'; "
            "edgebnn.propose_input_type(x) finds it) so that the hardware applies it to the converted input, or use "
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
    if isinstance(quantizer, qz.DoReFa) and quantizer.mode == "weights" and quantizer.k_bit > 1:
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} takes its range from the maximum of each batch, which hardware "
            "computing one sample at a time cannot reproduce; use dorefa in 'activations' mode for activations"
        )
    hw = hardware(quantizer, layer, which)
    if isinstance(hw, forms.Scaled) and hw.scale is None:
        raise FreezeError(
            f"{where(layer)}: its {which} {quantizer!r} multiplies its outputs by a scale computed from the values of "
            "each batch, which hardware computing one sample at a time cannot reproduce; use an activation quantizer "
            "with a constant scale or none (e.g. dorefa(2), or quantized_bits without alpha or with a numeric alpha)"
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
