"""An ``AveragePooling2D`` must read a tensor on a grid: a quantized tensor or an accumulator.

Among float ops (conv -> BatchNormalization -> AveragePooling2D -> quantizer) Keras averages
real values in float32, a rounding the graph cannot reproduce, and the mean does not commute
with the float ops or the quantizer exactly; such a pool is refused, and so is one on the
outputs of a scaled ``QuantActivation`` (DoReFa): Keras averages the scaled float32 values, not
the codes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...forms import Scaled
from ..items import FloatOp, FreezeError, Planning, Quantize, Step, where

ON_GRID = ("avgpool2d",)


def run(items: Iterable, planning: Planning) -> Iterator:
    """The items unchanged; refuses an avgpool2d step while float ops are pending."""
    pending: list[FloatOp] = []  # float ops since the last quantizer
    accumulator = None  # the last accumulator step
    scaled = None  # the QuantActivation whose scaled codes flow here (its scale follows them)
    for item in items:
        if isinstance(item, FloatOp):
            pending.append(item)
        elif isinstance(item, Quantize) and item.quantizer is not None:
            pending.clear()
            scaled = item.layer if item.which == "quantizer" and isinstance(item.quantizer.hardware(), Scaled) else None
        elif isinstance(item, Step) and item.kind in ("dense", "conv2d"):
            accumulator, scaled = item, None
        elif isinstance(item, Step) and item.kind in ON_GRID and scaled is not None:
            raise FreezeError(
                f"{where(item.layer)} averages the scaled outputs of {where(scaled)}, whose float32 mean differs from "
                "the scaled mean of its codes; pool before that QuantActivation (on the accumulator) or use an "
                "unscaled quantizer there (e.g. quantized_relu)"
            )
        elif isinstance(item, Step) and item.kind in ON_GRID and pending:
            before = f" of {accumulator.name!r}" if accumulator is not None else ""
            if any(op.bias for op in pending):
                before += " (with a quantized bias or none)"
            raise FreezeError(
                f"{where(item.layer)} averages the real-valued outputs of {', '.join(op.label for op in pending)}, "
                "whose float32 mean cannot be moved past them exactly; pool after the activation (after the "
                f"QuantActivation that quantizes them) or directly on the accumulator{before}, before the normalization"
            )
        yield item
