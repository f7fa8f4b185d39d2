"""The affine node of the float ops that end a model without a quantizer (a
``BatchNormalization``, larq's usual classifier head, with or without a float bias): replayed in
Keras on every reachable accumulator value (``replay``), per channel Keras's float32 outputs
must lie exactly on ``y = a * x + b`` with ``a`` and ``b`` of a few significant bits (powers of
two, or dyadic numbers of at most :data:`MAX_SCALE_BITS` bits); then the graph ends with an
exact ``affine`` node, else the model is refused with the fix: an ``output_quantizer`` for
freeze that holds the outputs' range (``output_quantizer_for``)."""

from __future__ import annotations

import numpy as np

from ...fixed import FixedType
from ...graph import affine_node
from .. import replay
from ..items import FreezeError, Step, where
from .thresholds import check_enumerable, reachable

# a scale of more significant bits than a DSP48 port takes is not a "reasonable" affine form
MAX_SCALE_BITS = 18
# the output type's width at most (what predict() returns exactly, with room to spare)
MAX_OUTPUT_BITS = 40


def node(step: Step, freezing):
    """The affine node of an "affine" step, reading the last node built."""
    src = freezing.source(step)
    check_enumerable(step, src)
    codes, _, _ = reachable(src, freezing.node)
    # one row more, one code above the first: the slope of a channel with one reachable value
    probe = np.concatenate([codes, codes[:1] + 1])
    values = src.type.from_codes(probe).astype(np.float32)
    y_all = replay.evaluate(step, values, freezing.jit, rank=len(src.shape), quantize=False)
    y = y_all[:-1]
    form = _affine(codes, src.type.lsb_exp, y, y_all[-1]) if np.all(np.isfinite(y_all)) else None
    if form is not None:
        (scale_type, scale), (offset_type, offset) = (_on_one_grid(v) for v in form)
        if scale_type.width <= MAX_SCALE_BITS + 1 and offset_type.width <= MAX_OUTPUT_BITS:
            out = affine_node(step.name, src, scale, scale_type, offset, offset_type, source=",".join(step.sources))
            x = src.type.from_codes(codes)
            # exact in float64: |codes| < 2**24, a of at most MAX_SCALE_BITS bits, and every
            # result on the output grid within its MAX_OUTPUT_BITS bits
            if out.type.width <= MAX_OUTPUT_BITS and np.array_equal(form[0] * x + form[1], y):
                return out
    names = ", ".join(op.layer.name for op in step.float_ops)
    proposal = output_quantizer_for(y_all)
    raise FreezeError(
        f"{where(step.layer)}: the model ends with the real-valued outputs of {names}, which Keras's float32 "
        f"arithmetic does not compute as an exact fixed-point affine form a * x + b of the accumulator {src.name!r}; "
        f"freeze with output_quantizer={proposal!r} (their range on a grid of 1/{2**OUTPUT_FRACTION_BITS}: Keras's "
        "logits rounded the same way are what is verified, no training needed) or end the model with such a "
        "QuantActivation"
    )


# the fractional bits of the output quantizer a refusal proposes: fine enough that rounding the
# logits rarely ties two of them
OUTPUT_FRACTION_BITS = 8


def output_quantizer_for(y: np.ndarray) -> str:
    """A ``quantized_bits`` holding every value of ``y`` (Keras's outputs) in range, with
    :data:`OUTPUT_FRACTION_BITS` fractional bits."""
    y = y[np.isfinite(y)]
    top = float(np.max(np.abs(y))) if y.size else 1.0
    integer = max(0, int(np.floor(np.log2(top))) + 1) if top > 0 else 0  # 2**integer > top
    signed = not y.size or float(np.min(y)) < 0
    bits = integer + OUTPUT_FRACTION_BITS + signed
    return f"quantized_bits({bits}, {integer})" if signed else f"quantized_bits({bits}, {integer}, keep_negative=False)"


def _affine(codes: np.ndarray, lsb_exp: int, y: np.ndarray, y_probe: np.ndarray):
    """Per channel the (a, b) through its first two reachable values, as float64 arrays; None
    when a slope is not finite. The caller checks every value. A channel with one reachable value
    takes its slope from ``y_probe``, the output one code above it: the layer's own slope, whose
    product with the value XLA may contract into a fused multiply-add (jit_compile), so the value
    alone does not show that Keras computes it in one way only."""
    a = np.zeros(codes.shape[1])
    b = np.zeros(codes.shape[1])
    for c in range(codes.shape[1]):
        k, first = np.unique(codes[:, c], return_index=True)
        yc = y[first, c]
        if len(k) == 1:
            k, yc = np.array([k[0], k[0] + 1]), np.array([yc[0], y_probe[c]])
        a[c] = (yc[1] - yc[0]) / np.ldexp(float(k[1] - k[0]), lsb_exp)
        b[c] = yc[0] - a[c] * np.ldexp(float(k[0]), lsb_exp)
    return (a, b) if np.all(np.isfinite(a)) and np.all(np.isfinite(b)) else None


def _on_one_grid(values: np.ndarray) -> tuple[FixedType, np.ndarray]:
    """The narrowest fixed-point type holding every value of ``values`` (dyadic float64s) on one
    grid, and their codes."""
    nonzero = values[values != 0]
    if len(nonzero) == 0:
        lsb = 0
    else:
        m, e = np.frexp(nonzero)  # value = m * 2**e, 0.5 <= |m| < 1
        mant = np.ldexp(m, 53).astype(np.int64)
        tz = np.array([(int(v) & -int(v)).bit_length() - 1 for v in mant])
        lsb = int((e - 53 + tz).min())
    t = FixedType.for_range(float(values.min()), float(values.max()), lsb)
    return t, t.codes(values)
