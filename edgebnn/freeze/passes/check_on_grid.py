"""An ``AveragePooling2D`` (or a global average) and a ``ZeroPadding2D`` must read a tensor on a
grid: a quantized tensor or an accumulator.

Among float ops (conv -> BatchNormalization -> AveragePooling2D -> quantizer) Keras averages
real values in float32, a rounding the graph cannot reproduce, and the mean does not commute
with the float ops or the quantizer exactly; such a pool is refused. A padding there would put
values into a tensor the graph never holds (only the thresholds of its quantizer); refused too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..items import FloatOp, FreezeError, Planning, Quantize, Step, where

ON_GRID = ("avgpool2d", "sumpool2d")


def run(items: Iterable, planning: Planning) -> Iterator:
    """The items unchanged; refuses an avgpool2d step while float ops are pending."""
    pending: list[FloatOp] = []  # float ops since the last quantizer
    accumulator = None  # the last accumulator step
    for item in items:
        if isinstance(item, FloatOp):
            pending.append(item)
        elif isinstance(item, Quantize) and item.quantizer is not None:
            pending.clear()
        elif isinstance(item, Step) and item.kind in ("dense", "conv2d"):
            accumulator = item
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
            raise FreezeError(
                f"{where(item.layer)} averages the real-valued outputs of {', '.join(op.label for op in pending)}, "
                "whose float32 mean cannot be moved past them exactly; pool after the activation (after the "
                f"QuantActivation that quantizes them) or directly on the accumulator{before}, before the normalization"
            )
        yield item
