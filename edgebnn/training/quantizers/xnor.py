"""XNOR-Net's sign with a per-channel scale: ``XnorSign``."""

from __future__ import annotations

import numpy as np
from keras import ops

from ... import forms
from .base import (
    Quantizer,
    _channel_scale,
    _custom,
    _mean_once,
    _reduce_axes,
    _register,
    _sign,
    _ste_identity,
    _tensor,
    _window,
)
from .larq import _clip_config


@_register("xnor_sign")
class XnorSign(Quantizer):
    r"""XNOR-Net binarization: a sign times the mean magnitude, one scale per index of ``axis``.

    .. math::
        q(x)_i = E_{a(i)} \cdot \mathrm{sign}(x_i), \qquad
        E_k = \frac{1}{N} \sum_{j:\, a(j) = k} |x_j|

    where :math:`a(i)` is the index of element :math:`i` along ``axis`` and :math:`N` the number
    of elements sharing it: ``axis=-1`` (the default, ``per_channel=True``) gives one scale per
    output channel of a kernel; ``axis=2`` of a ``(kh, kw, C_in, C_out)`` kernel one per input
    channel, :math:`E_i = \operatorname{mean} |W_{:,:,i,:}|`; ``axis=None``
    (``per_channel=False``) one scale for the whole tensor. A 1-D tensor is one channel.
    ``po2`` rounds each :math:`E` to :math:`2^{\mathrm{round}(\log_2 E)}` (half to even) so the
    scale is a shift; a scale of 0 (every weight of its slice 0) stays 0. ``sign(0) = +1``.

    .. math::
        \frac{\partial q_i}{\partial x_j} = E_{a(i)}\,[\,|x_i| \le \texttt{clip\_value}\,]\,[i = j]
        \;\Big(+\; [a(i) = a(j)]\, \frac{\mathrm{sign}(x_i)\,\mathrm{sign}(x_j)}{N}\Big)

    ``clip_value=None`` passes every gradient (no window). The bracketed term, the gradient
    through the scale, is used only with ``scale_gradient=True`` (else :math:`E` is a constant in
    the backward pass); the power-of-two rounding passes that gradient straight through.
    Hardware: ``scaled`` binary along ``axis``. A scale along an axis that a layer sums over (a
    kernel's input channels) deploys exactly when it is a power of two (``po2=True``): freeze
    shifts it into integer codes.
    """

    def __init__(
        self,
        per_channel: bool | None = None,
        po2: bool = False,
        clip_value: float | None = 1.0,
        scale_gradient: bool = False,
        axis: int | None = -1,
    ):
        if per_channel is not None and not per_channel:
            if axis not in (-1, None):
                raise ValueError(
                    f"xnor_sign(per_channel=False, axis={axis!r}) asks for one scale per tensor and one per index of "
                    f"axis {axis} at once; write axis={axis!r} alone, or axis=None for one scale per tensor"
                )
            axis = None
        if axis is not None and (isinstance(axis, bool) or not isinstance(axis, (int, np.integer))):
            raise ValueError(f"xnor_sign(axis={axis!r}): axis must be an integer (e.g. -1, 2) or None for one scale per tensor")
        self.axis = None if axis is None else int(axis)
        self.po2 = bool(po2)
        self.clip_value = _clip_config(clip_value)
        self.scale_gradient = bool(scale_gradient)

    @property
    def per_channel(self) -> bool:
        """One scale per index of ``axis`` (not one per tensor)."""
        return self.axis is not None

    def _keep(self, nd: int) -> int | None:
        """The axis (in ``range(nd)``) that keeps one scale per index, None for one per tensor."""
        return None if self.axis is None or nd <= 1 else self.axis % nd

    def _scale(self, x):
        nd = len(x.shape)
        keep = self._keep(nd)
        # a scale along the last axis is a vector (it broadcasts there); along another axis it keeps its dimensions
        e = _mean_once(ops.abs(x), axis=_reduce_axes(nd, keep), keepdims=keep is not None and keep != nd - 1)
        if self.po2:
            e = _ste_identity(lambda v: ops.power(2.0, ops.round(ops.log2(v))))(e)
        return e

    def scale(self, x):
        """:math:`E` for the tensor ``x``: a scalar, one value per channel of the last axis, or
        one per index of ``axis`` with the other dimensions kept (so it broadcasts on ``x``)."""
        return self._scale(ops.stop_gradient(_tensor(x)))

    def split(self, x, training=None):
        x = _tensor(x)
        e = self._scale(x)
        if not self.scale_gradient:
            e = ops.stop_gradient(e)
        clip = self.clip_value
        return _custom(_sign, lambda v, dy: dy * _window(v, clip, dy.dtype))(x), e

    def __call__(self, x, training=None):
        return self.rescale(*self.split(x))

    def hardware(self, x=None) -> forms.Form:
        if x is None:
            return forms.Scaled(forms.Binary(), None, axis=self.axis)
        x = _tensor(x)
        keep = self._keep(len(x.shape))
        along = -1 if keep is None or keep == len(x.shape) - 1 else keep  # the last axis's scale is a vector
        return forms.Scaled(forms.Binary(), _channel_scale(self.scale(x), along), axis=self.axis)

    def get_config(self):
        return {
            "po2": self.po2,
            "clip_value": self.clip_value,
            "scale_gradient": self.scale_gradient,
            "axis": self.axis,
        }
