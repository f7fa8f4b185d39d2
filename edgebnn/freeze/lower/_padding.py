"""The explicit padding of a convolution (TensorFlow's "same" split, Keras's "causal" left
padding) and its ``pad_values`` as a code of the quantized input's type: what the convolutions
(``conv``) and their padding steps (``zero_padding``, ``zeropad1d``) share."""

from __future__ import annotations

import numpy as np

from ...training.layers import _same_padding
from ..items import FreezeError, where


def pads_value(layer) -> bool:
    """The layer pads with a non-zero ``pad_values`` somewhere: a padding step comes before it."""
    amounts = padding(layer, tuple(int(d) for d in layer.input.shape[1:-1]))
    return layer.padding == "same" and float(layer.pad_values) != 0.0 and any(a for pair in amounts for a in pair)


def explicit_padding(layer, src) -> tuple:
    """(padding, one (before, after) pair per spatial axis; pad code) of the convolution ``layer``
    on the node ``src`` (what its padding step pads)."""
    amounts = padding(layer, src.shape[: len(layer.kernel_size)])
    return amounts, pad_code(layer, src, amounts)


def padding(layer, sizes) -> tuple[tuple[int, int], ...]:
    """The explicit (before, after) padding of each spatial axis of the input ``sizes``."""
    if layer.padding == "same":
        return tuple(
            _same_padding(n, k, s, d) for n, k, s, d in zip(sizes, layer.kernel_size, layer.strides, layer.dilation_rate)
        )
    if layer.padding == "causal":  # Conv1D: the extent minus one on the left, as Keras pads
        return ((layer.dilation_rate[0] * (layer.kernel_size[0] - 1), 0),)
    return tuple((0, 0) for _ in sizes)


def pad_code(layer, src, amounts) -> int:
    """``pad_values`` as a code of the quantized input ``src``'s type (0 without padding)."""
    if not any(a for pair in amounts for a in pair) or layer.padding == "causal":  # causal pads zeros
        return 0
    pad = float(layer.pad_values)
    if not src.type.contains(np.array([pad])):
        raise FreezeError(
            f"{where(layer)} pads with pad_values={pad}, which is not on the grid of its quantized input "
            f"{src.type}; pad with a value the input quantizer can produce (e.g. 1.0 or -1.0 after a sign)"
        )
    return int(src.type.codes(np.array([pad]))[0])
