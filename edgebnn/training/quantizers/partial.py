"""A quantizer on chosen channels only: ``PartialQuantizer``; :func:`shape_problem`, why a
quantizer cannot quantize a weight of a given shape.
"""

from __future__ import annotations

import numpy as np
from keras import ops

from ... import forms
from .base import Quantizer, _register, _tensor, get, serialize
from .xnor import XnorSign


@_register("partial_quantizer", "partial")
class PartialQuantizer(Quantizer):
    r"""A quantizer on chosen channels only.

    .. math::
        q(x)_{\ldots c \ldots} = \begin{cases} Q(x_{[C]})_{\ldots c \ldots} & c \in C \\
        O(x_{[\bar C]})_{\ldots c \ldots} & c \notin C \end{cases}

    along ``axis``: ``quantizer`` :math:`Q` sees the sub-tensor of the channels
    :math:`C` = ``channels`` (so per-tensor statistics such as a TWN threshold or an XNOR
    scale are those of the chosen channels together), ``other`` :math:`O` the rest (identity
    when None). Each gradient is its quantizer's. With ``Q = xnor_sign(axis=axis)`` each chosen
    slice has its own scale: for a ``(kh, kw, C_in, C_out)`` kernel,
    ``partial(xnor_sign(axis=2, clip_value=None), C, axis=2, other=quantized_bits(4, 0))`` is
    :math:`q(W)_{:,:,i,:} = \mathrm{sign}(W_{:,:,i,:})\, \operatorname{mean}|W_{:,:,i,:}|` for
    :math:`i \in C` (scale constant in the backward pass, identity straight-through gradient) and
    4-bit elsewhere. Hardware: ``partial`` with the two forms.
    """

    def __init__(self, quantizer, channels, axis: int = -1, other=None):
        self.quantizer = get(quantizer)
        if self.quantizer is None:
            raise ValueError("PartialQuantizer needs a quantizer for the chosen channels, e.g. 'ste_sign'")
        self.other = get(other)
        chans = sorted({int(c) for c in channels})
        if not chans or chans[0] < 0:
            raise ValueError(f"PartialQuantizer channels {channels!r} must be non-negative channel indices")
        self.channels = tuple(chans)
        self.axis = int(axis)

    def _split(self, shape):
        ax = self.axis % len(shape)
        n = int(shape[ax])
        if self.channels[-1] >= n:
            raise ValueError(f"PartialQuantizer channel {self.channels[-1]} is out of range: axis {self.axis} has {n}")
        rest = [c for c in range(n) if c not in set(self.channels)]
        return ax, list(self.channels), rest

    def __call__(self, x, training=None):
        x = _tensor(x)
        ax, chosen, rest = self._split(x.shape)
        out = self.quantizer(ops.take(x, chosen, axis=ax), training=training)
        if not rest:
            return out
        b = ops.take(x, rest, axis=ax)
        b = b if self.other is None else self.other(b, training=training)
        inverse = np.argsort(np.array(chosen + rest))
        return ops.take(ops.concatenate([out, ops.cast(b, out.dtype)], axis=ax), inverse, axis=ax)

    def hardware(self, x=None) -> forms.Form:
        if x is None:
            hq = self.quantizer.hardware()
            ho = None if self.other is None else self.other.hardware()
        else:
            x = _tensor(x)
            ax, chosen, rest = self._split(x.shape)
            hq = self.quantizer.hardware(ops.take(x, chosen, axis=ax))
            ho = None if self.other is None else self.other.hardware(ops.take(x, rest, axis=ax) if rest else None)
        return forms.Partial(hq, ho, self.channels, self.axis)

    def get_config(self):
        return {
            "quantizer": serialize(self.quantizer),
            "channels": list(self.channels),
            "axis": self.axis,
            "other": serialize(self.other),
        }


def shape_problem(quantizer, shape) -> str | None:
    """Why ``quantizer`` cannot quantize a weight of ``shape`` (None when it can): a numeric
    alpha of several values is one per channel of the last axis; a ``PartialQuantizer``'s
    channels must exist along its axis."""
    alpha = getattr(quantizer, "alpha", None)
    if isinstance(alpha, (list, tuple, np.ndarray)) and np.size(alpha) not in (1, shape[-1]):
        return (
            f"has {np.size(alpha)} alpha values but the kernel has {shape[-1]} channels on its last axis; give one "
            "alpha per channel or one for all"
        )
    if isinstance(quantizer, XnorSign) and quantizer.axis is not None and not -len(shape) <= quantizer.axis < len(shape):
        return (
            f"scales along axis {quantizer.axis} but the kernel has {len(shape)} axes {tuple(shape)}; choose an axis "
            f"from {-len(shape)} to {len(shape) - 1}, or None for one scale per tensor"
        )
    if isinstance(quantizer, PartialQuantizer):
        if not -len(shape) <= quantizer.axis < len(shape):
            return (
                f"chooses channels along axis {quantizer.axis} but the kernel has {len(shape)} axes {tuple(shape)}; "
                f"choose an axis from {-len(shape)} to {len(shape) - 1}"
            )
        n = shape[quantizer.axis % len(shape)]
        if quantizer.channels[-1] >= n:
            return (
                f"binarizes channel {quantizer.channels[-1]} but the kernel has {n} channels along axis "
                f"{quantizer.axis}; choose channels below {n}"
            )
        for part, count in ((quantizer.quantizer, len(quantizer.channels)), (quantizer.other, n - len(quantizer.channels))):
            problem = (
                None
                if part is None or count == 0
                else shape_problem(
                    part, (*shape[: quantizer.axis % len(shape)], count, *shape[quantizer.axis % len(shape) + 1 :])
                )
            )
            if problem:
                return problem
    return None
