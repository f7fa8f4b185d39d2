"""larq's quantizers, with larq's numbers and aliases: ``SteSign``, ``ApproxSign``, ``SwishSign``,
``MagnitudeAwareSign``, ``SteHeaviside``, ``SteTern``, ``DoReFa``, ``NoOp``.
"""

from __future__ import annotations

from keras import ops

from ... import forms
from ...fixed import FixedType
from .base import (
    NoHardwareForm,
    Quantizer,
    _channel_scale,
    _custom,
    _mean_once,
    _register,
    _round_conv_times,
    _sign,
    _ste_identity,
    _tensor,
    _window,
)


def _clip_config(clip_value):
    return None if clip_value is None else float(clip_value)


@_register("ste_sign")
class SteSign(Quantizer):
    r"""Sign with a straight-through estimator (larq ``ste_sign``).

    .. math::
        q(x) = \begin{cases} -1 & x < 0 \\ +1 & x \ge 0 \end{cases}
        \qquad
        \frac{\partial q}{\partial x} = \begin{cases} 1 & |x| \le \texttt{clip\_value} \\
        0 & |x| > \texttt{clip\_value} \end{cases}

    ``sign(0) = +1``; the window is inclusive; ``clip_value=None`` passes every gradient.
    Hardware: ``binary``.
    """

    def __init__(self, clip_value: float | None = 1.0):
        self.clip_value = _clip_config(clip_value)

    def __call__(self, x, training=None):
        clip = self.clip_value
        return _custom(_sign, lambda x, dy: dy * _window(x, clip, dy.dtype))(_tensor(x))

    def hardware(self, x=None) -> forms.Form:
        return forms.Binary()

    def get_config(self):
        return {"clip_value": self.clip_value}


@_register("approx_sign")
class ApproxSign(Quantizer):
    r"""Sign with the ApproxSign gradient of Bi-Real Net (larq ``approx_sign``).

    .. math::
        q(x) = \begin{cases} -1 & x < 0 \\ +1 & x \ge 0 \end{cases}
        \qquad
        \frac{\partial q}{\partial x} = \begin{cases} 2 - 2|x| & |x| \le 1 \\ 0 & |x| > 1 \end{cases}

    Hardware: ``binary``.
    """

    def __call__(self, x, training=None):
        def backward(x, dy):
            a = ops.abs(x)
            return ops.where(a <= 1.0, (1.0 - a) * 2.0 * dy, ops.zeros_like(dy))

        return _custom(_sign, backward)(_tensor(x))

    def hardware(self, x=None) -> forms.Form:
        return forms.Binary()


@_register("swish_sign")
class SwishSign(Quantizer):
    r"""Sign with the SignSwish gradient of BNN+ (larq ``swish_sign``).

    .. math::
        q(x) = \begin{cases} -1 & x < 0 \\ +1 & x \ge 0 \end{cases}
        \qquad
        \frac{\partial q}{\partial x} = \frac{\beta\{2 - \beta x \tanh(\beta x / 2)\}}{1 + \cosh(\beta x)}

    (``beta = 5``: the gradient is 5 at 0 and tends to 0 for large :math:`|x|`). Hardware: ``binary``.
    """

    def __init__(self, beta: float = 5.0):
        self.beta = float(beta)

    def __call__(self, x, training=None):
        beta = self.beta

        def backward(x, dy):
            bx = beta * x
            return dy * beta * (2.0 - bx * ops.tanh(bx * 0.5)) / (1.0 + ops.cosh(bx))

        return _custom(_sign, backward)(_tensor(x))

    def hardware(self, x=None) -> forms.Form:
        return forms.Binary()

    def get_config(self):
        return {"beta": self.beta}


@_register("magnitude_aware_sign")
class MagnitudeAwareSign(Quantizer):
    r"""Magnitude-aware sign of Bi-Real Net (larq ``magnitude_aware_sign``), for kernels.

    .. math::
        q(x) = s_c \cdot \mathrm{sign}(x), \quad s_c = \operatorname{mean}_{\text{all axes but the last}} |x|
        \qquad
        \frac{\partial q}{\partial x} = s_c \cdot \begin{cases} 1 & |x| \le \texttt{clip\_value} \\
        0 & |x| > \texttt{clip\_value} \end{cases}

    ``sign(0) = +1``; the scale :math:`s_c` (one per output channel, the last axis) is a
    constant for the gradient (``stop_gradient``). As in larq, a 1-D tensor reduces over no
    axis (:math:`s = |x|`). Hardware: ``scaled`` binary, scale per channel of the last axis.
    """

    def __init__(self, clip_value: float | None = 1.0):
        self.clip_value = _clip_config(clip_value)

    def scale(self, x):
        """The per-output-channel scale :math:`s_c` of ``x`` (shape: x's last axis)."""
        x = _tensor(x)
        nd = len(x.shape)
        return ops.abs(x) if nd <= 1 else _mean_once(ops.abs(x), axis=tuple(range(nd - 1)))

    def split(self, x, training=None):
        x = _tensor(x)
        clip = self.clip_value
        return _custom(_sign, lambda x, dy: dy * _window(x, clip, dy.dtype))(x), ops.stop_gradient(self.scale(x))

    def __call__(self, x, training=None):
        return self.rescale(*self.split(x))

    def hardware(self, x=None) -> forms.Form:
        scale = None if x is None else _channel_scale(self.scale(x), -1)
        return forms.Scaled(forms.Binary(), scale, axis=-1)

    def get_config(self):
        return {"clip_value": self.clip_value}


@_register("ste_heaviside")
class SteHeaviside(Quantizer):
    r"""Heaviside step with a straight-through estimator (larq ``ste_heaviside``).

    .. math::
        q(x) = \begin{cases} 1 & x > 0 \\ 0 & x \le 0 \end{cases}
        \qquad
        \frac{\partial q}{\partial x} = \begin{cases} 1 & |x| \le \texttt{clip\_value} \\
        0 & |x| > \texttt{clip\_value} \end{cases}

    ``q(0) = 0`` (larq's ``math.heaviside`` is ``sign(relu(x))``). Hardware: ``unipolar``.
    """

    def __init__(self, clip_value: float | None = 1.0):
        self.clip_value = _clip_config(clip_value)

    def __call__(self, x, training=None):
        clip = self.clip_value
        fwd = lambda x: ops.cast(x > 0, x.dtype)
        return _custom(fwd, lambda x, dy: dy * _window(x, clip, dy.dtype))(_tensor(x))

    def hardware(self, x=None) -> forms.Form:
        return forms.Unipolar()

    def get_config(self):
        return {"clip_value": self.clip_value}


@_register("ste_tern")
class SteTern(Quantizer):
    r"""Ternarization with a straight-through estimator (larq ``ste_tern``).

    .. math::
        q(x) = \mathrm{sign}\big(\mathrm{sign}(x + \Delta) + \mathrm{sign}(x - \Delta)\big)
        = \begin{cases} +1 & x \ge \Delta \\ 0 & |x| < \Delta \\ -1 & x \le -\Delta \end{cases}
        \qquad
        \frac{\partial q}{\partial x} = \begin{cases} 1 & |x| \le \texttt{clip\_value} \\
        0 & |x| > \texttt{clip\_value} \end{cases}

    (``sign(0) = 0`` here, so :math:`|x| = \Delta` maps to ±1, and with :math:`\Delta = 0`,
    ``q(0) = 0``.) :math:`\Delta` is ``threshold_value``, or with ``ternary_weight_networks``
    :math:`\Delta = \frac{0.7}{n} \sum_i |x_i|` over the whole (unclipped) tensor.
    Hardware: ``ternary``.
    """

    def __init__(self, threshold_value: float = 0.05, ternary_weight_networks: bool = False, clip_value: float | None = 1.0):
        self.threshold_value = float(threshold_value)
        self.ternary_weight_networks = bool(ternary_weight_networks)
        self.clip_value = _clip_config(clip_value)

    def threshold(self, x):
        """:math:`\\Delta` for the tensor ``x``."""
        x = _tensor(x)
        if self.ternary_weight_networks:
            # the runtime size: as an activation the batch dimension is None when traced
            n = ops.cast(ops.size(x), x.dtype)
            return 0.7 * ops.sum(ops.abs(x)) / n
        return ops.convert_to_tensor(self.threshold_value, dtype=x.dtype)

    def __call__(self, x, training=None):
        x = _tensor(x)
        t = self.threshold(x)
        clip = self.clip_value
        fwd = lambda x: ops.sign(ops.sign(x + t) + ops.sign(x - t))
        return _custom(fwd, lambda x, dy: dy * _window(x, clip, dy.dtype))(x)

    def hardware(self, x=None) -> forms.Form:
        return forms.Ternary()

    def get_config(self):
        return {
            "threshold_value": self.threshold_value,
            "ternary_weight_networks": self.ternary_weight_networks,
            "clip_value": self.clip_value,
        }


@_register("dorefa_quantizer", "dorefa")
class DoReFa(Quantizer):
    r"""k-bit quantizer of DoReFa-Net (larq ``DoReFa``), :math:`n = 2^k - 1`.

    ``mode="activations"``:

    .. math::
        q(x) = \frac{\mathrm{round}(n \cdot \mathrm{clip}(x, 0, 1))}{n}
        \qquad
        \frac{\partial q}{\partial x} = \begin{cases} 1 & 0 \le x \le 1 \\ 0 & \text{else} \end{cases}

    ``mode="weights"`` (with :math:`d = \max |\tanh(x)|` over the tensor, a constant for the
    gradient; :math:`x' = 0` everywhere when :math:`d = 0`):

    .. math::
        x' = \frac{\tanh(x)}{2d} + \frac12, \quad
        q(x) = 2\,\frac{\mathrm{round}(n x')}{n} - 1
        \qquad
        \frac{\partial q}{\partial x} = \frac{1 - \tanh^2(x)}{d}

    ``round`` is half to even, of the float32 product as larq computes it: at
    :math:`x = 0.16666667` (float32), :math:`3x` rounds to exactly :math:`0.5`, so ``DoReFa(2)``
    gives 0 as larq does. ``rounding="exact"`` (activations mode only) rounds the real product
    :math:`n \cdot \mathrm{clip}(x, 0, 1)` instead, which that ``x`` (just above :math:`1/6`) takes
    to :math:`1/3`; not larq's numbers, one code apart at such inputs. In ``"weights"`` mode
    ``round`` is of :math:`n` times the float32 :math:`x'`, whose own :math:`+\frac12` may round.
    Hardware: activations are ``scaled`` codes ``uint<k>`` times
    ``1/n`` (``unipolar`` when k = 1); weights are ``scaled`` odd codes in ``[-n, n]``
    (``int<k+1>``) times ``1/n`` (``binary`` when k = 1). ``1/n`` is not a power of two for
    k > 1: Keras' float32 values are the rounded quotients.
    """

    def __init__(self, k_bit: int = 2, mode: str = "activations", rounding: str = "larq"):
        if mode not in ("activations", "weights"):
            raise ValueError(f"DoReFa mode {mode!r} is unknown; use 'activations' or 'weights'")
        if int(k_bit) < 1:
            raise ValueError(f"DoReFa k_bit={k_bit} needs at least 1 bit")
        if rounding not in ("larq", "exact"):
            raise ValueError(f"DoReFa rounding {rounding!r} is unknown; use 'larq' or 'exact'")
        if rounding == "exact" and mode == "weights":
            raise ValueError("DoReFa rounding='exact' applies to mode='activations' only; drop it for weights")
        self.k_bit = int(k_bit)
        self.mode = mode
        self.rounding = rounding

    @property
    def precision(self) -> int:
        return self.k_bit

    def _unit(self, x):
        """x' of the weights mode."""
        limited = ops.tanh(x)
        d = ops.stop_gradient(ops.max(ops.abs(limited)))
        return ops.divide_no_nan(limited, 2.0 * d) + 0.5

    def _codes(self, v):
        """``round(n v)`` half to even: of the float32 product (larq) or of the real one."""
        if self.rounding == "exact":
            return _round_conv_times(v, self.k_bit)
        return ops.round(v * float(2**self.k_bit - 1))

    def __call__(self, x, training=None):
        x = _tensor(x)
        n = float(2**self.k_bit - 1)
        k_bit = _ste_identity(lambda v: self._codes(v) / n)
        if self.mode == "activations":
            return k_bit(ops.clip(x, 0.0, 1.0))
        return 2.0 * k_bit(self._unit(x)) - 1.0

    def split(self, x, training=None):
        """Codes and :math:`n` (k > 1): ``round(n clip(x, 0, 1))`` (activations) or the odd codes
        ``2 round(n x') - n`` (weights), each with :math:`n` times the gradient of :math:`q`;
        ``rescale`` divides by :math:`n`. In activations mode ``rescale(*split(x))`` is
        ``q(x)`` bit for bit; in weights mode it is ``(2r - n) / n`` rounded once, ``q(x)`` in
        real arithmetic."""
        if self.k_bit == 1:
            return self(x, training=training), None
        x = _tensor(x)
        n = float(2**self.k_bit - 1)
        if self.mode == "activations":
            return _custom(self._codes, lambda v, dy: dy * n)(ops.clip(x, 0.0, 1.0)), n
        return _custom(lambda v: 2.0 * self._codes(v) - n, lambda v, dy: dy * (2.0 * n))(self._unit(x)), n

    def rescale(self, v, s):
        return v if s is None else v / s

    def hardware(self, x=None) -> forms.Form:
        k, n = self.k_bit, 2**self.k_bit - 1
        if self.mode == "activations":
            if k == 1:
                return forms.Unipolar()
            return forms.Scaled(forms.Grid(FixedType(k, k, False, "RND_CONV", "SAT")), 1.0 / n)
        if k == 1:
            return forms.Binary()
        return forms.Scaled(forms.Grid(FixedType(k + 1, k + 1, True, "RND_CONV", "SAT_SYM")), 1.0 / n)

    def get_config(self):
        return {"k_bit": self.k_bit, "mode": self.mode, "rounding": self.rounding}


DoReFaQuantizer = DoReFa  # larq's former name


@_register("noop")
class NoOp(Quantizer):
    r"""Identity that only records a precision (larq ``NoOp``), e.g. for weights that an
    optimizer such as Bop keeps binary itself.

    .. math::
        q(x) = x \qquad \frac{\partial q}{\partial x} = 1

    Hardware: none (the values are not put on any grid); ``hardware()`` raises
    :class:`NoHardwareForm`.
    """

    def __init__(self, precision: int):
        self.precision = int(precision)

    def __call__(self, x, training=None):
        return _tensor(x)

    def hardware(self, x=None) -> forms.Form:
        raise NoHardwareForm(
            f"NoOp(precision={self.precision}) leaves values unquantized, so they lie on no hardware grid; "
            "use a quantizer such as 'ste_sign' or 'quantized_bits(8, 0)' for tensors that are exported"
        )

    def get_config(self):
        return {"precision": self.precision}


NoOpQuantizer = NoOp  # larq's former name
