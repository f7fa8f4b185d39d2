"""A separable layer whose float64 pointwise sum Keras cannot compute exactly is refused.

A layer that sums exactly (``layers.sums_exactly``: float32 scales that are not powers of two
along an axis a sum runs over) computes its sums in float64 and rounds once to float32, which
the next quantizer's thresholds replay. In a separable layer with such scales in both kernels
the depthwise sums already reach about 30 significant bits (input codes times 24-bit scales),
and the pointwise sum multiplies each by another 24-bit scale: it needs more than float64's 53
bits (57 for XNOR scales on 4-bit inputs), so Keras rounds products and partial sums in the
order TensorFlow's convolution picks. The emulator's integers and ap_fixed would hold the exact
sum, but no fixed-point sum, however wide, equals the number Keras computes.
"""

from __future__ import annotations

import math

from .. import forms
from ..items import FreezeError, Step, where
from ..lower import separable
from .float32_exactness import float32_exact, sum_bound


def run(step: Step, freezing) -> None:
    """Refuse the pointwise sum of a separable layer summing in float64 past 53 bits."""
    if step.kind != separable.KIND or step.name not in freezing.float64_sums:
        return
    node = freezing.node(step.name)
    src = freezing.node(node.inputs[0])
    if float32_exact(node, [src], float64=True):
        return
    layer = step.layer
    bits = math.ceil(math.log2(sum_bound(node, [src])))
    quantizers = (layer.depthwise_quantizer, layer.pointwise_quantizer)
    fixes = [fix for q in quantizers if (fix := forms.po2_spelling(q))]
    raise FreezeError(
        f"{where(layer)}: its depthwise_quantizer {layer.depthwise_quantizer!r} and pointwise_quantizer "
        f"{layer.pointwise_quantizer!r} scale by float32 values that are not powers of two along the axes they sum "
        f"over, so its pointwise sum of the depthwise sums needs {bits} significant bits, more than the 53 of the "
        "float64 arithmetic Keras computes it in, which rounds in the order TensorFlow's convolution picks, so no "
        "fixed-point sum reproduces it; give one of the "
        f"two kernels power-of-two scales ({' or '.join(fixes) or 'po2=True'}) or scale the pointwise kernel per "
        "output channel (axis=-1) or per tensor"
    )
