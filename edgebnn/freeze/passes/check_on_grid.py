"""An average pool (``AveragePooling2D``, ``AveragePooling1D``, a global average), a
``ZeroPadding1D`` and a ``ZeroPadding2D`` must read a tensor on a grid: a quantized tensor or an
accumulator.

Among float ops (conv -> BatchNormalization -> AveragePooling2D -> quantizer) Keras averages
real values in float32, a rounding the graph cannot reproduce, and the mean does not commute
with the float ops or the quantizer exactly; such a pool is refused, and so is one on the
outputs of a scaled ``QuantActivation`` (DoReFa): Keras averages the scaled float32 values, not
the codes. A padding among float ops would put values into a tensor the graph never holds (only
the thresholds of its quantizer); refused too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...forms import Scaled
from ..items import FloatOp, FreezeError, Planning, Quantize, Step, where

ON_GRID = ("avgpool2d", "avgpool1d", "zeropad1d", "sumpool2d", "sumpool1d")
AVERAGES = ("avgpool2d", "avgpool1d", "sumpool2d", "sumpool1d")
# accumulator-like steps: exact tensors on a grid before any float op
ACCUMULATORS = ("dense", "conv2d", "conv1d", "depthwise_conv2d", "pointwise", "add", "concatenate")


def run(items: Iterable, planning: Planning) -> Iterator:
    """The items unchanged; refuses an average pool or zero padding step while float ops are pending."""
    pending: list[FloatOp] = []  # float ops since the last quantizer
    accumulator = None  # the last accumulator (or merge) step
    scaled = None  # the QuantActivation whose scaled codes flow here (its scale follows them)
    for item in items:
        if isinstance(item, FloatOp):
            pending.append(item)
        elif isinstance(item, Quantize) and item.quantizer is not None:
            pending.clear()
            scaled = item.layer if item.which == "quantizer" and isinstance(item.quantizer.hardware(), Scaled) else None
        elif isinstance(item, Step) and item.kind in ACCUMULATORS:
            accumulator, scaled = item, None
        elif isinstance(item, Step) and item.kind in AVERAGES and scaled is not None:
            raise FreezeError(
                f"{where(item.layer)} averages the scaled outputs of {where(scaled)}, whose float32 mean differs from "
                "the scaled mean of its codes; pool before that QuantActivation (on the accumulator) or use an "
                "unscaled quantizer there (e.g. quantized_relu)"
            )
        elif isinstance(item, Step) and item.kind == "pad2d" and pending:
            bias = " (with a quantized bias or none)" if any(op.bias for op in pending) else ""
            raise FreezeError(
                f"{where(item.layer)} pads the real-valued outputs of {', '.join(op.label for op in pending)}, which the "
                "graph holds only as the thresholds of their quantizer; pad after the quantizer (e.g. a QuantActivation) "
                f"or directly on the accumulator{bias}, before the float ops"
            )
        elif isinstance(item, Step) and item.kind in ON_GRID and pending:
            before = f" of {accumulator.name!r}" if accumulator is not None else ""
            if any(op.bias for op in pending):
                before += " (with a quantized bias or none)"
            if item.kind == "zeropad1d":
                raise FreezeError(
                    f"{where(item.layer)} pads the real-valued outputs of {', '.join(op.label for op in pending)} with "
                    "zeros the quantizer after it would see unchanged; pad after the activation (after the QuantActivation "
                    f"that quantizes them) or directly on the accumulator{before}, before the normalization"
                )
            raise FreezeError(
                f"{where(item.layer)} averages the real-valued outputs of {', '.join(op.label for op in pending)}, "
                "whose float32 mean cannot be moved past them exactly; pool after the activation (after the "
                f"QuantActivation that quantizes them) or directly on the accumulator{before}, before the normalization"
            )
        yield item
