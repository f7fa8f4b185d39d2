"""QKeras's quantizers, with QKeras's numbers: ``quantized_bits``, ``quantized_relu``,
``quantized_tanh``, ``binary_tanh``, ``quantized_sigmoid``, ``binary``, ``ternary``,
``quantized_po2``, ``quantized_relu_po2``.
"""

from __future__ import annotations

import contextlib
import math

import keras
import numpy as np
from keras import ops

from ... import forms
from ...fixed import OVERFLOW_MODES, ROUNDING_MODES, FixedType
from ...forms import INT2
from .base import (
    _EPS,
    _LN2,
    NoHardwareForm,
    Quantizer,
    _alpha_tensor,
    _alpha_value,
    _channel_scale,
    _check_alpha,
    _custom,
    _po2,
    _qkeras_axes,
    _qkeras_scale,
    _register,
    _round_conv_sum,
    _sign,
    _ste_identity,
    _ste_over,
    _Stochastic,
    _stochastic_codes,
    _tensor,
    fixed_quantize,
)


def _relu_slope_grad(x, slope: float, upper):
    """d/dx of QKeras' STE path ``relu(x, slope)`` (``tf.nn.relu``/``leaky_relu``: 1 for
    x > 0, ``slope`` for x <= 0), zero above ``upper`` (where QKeras holds the path constant)."""
    g = ops.where(x > 0, ops.ones_like(x), ops.full_like(x, slope))
    if upper is not None:
        g = ops.where(x <= upper, g, ops.zeros_like(x))
    return g


def _hard_sigmoid(x):
    """QKeras' default internal sigmoid: clip(0.5 x + 0.5, 0, 1), in float32 as QKeras computes it
    (the sum rounds: it is 0.5 for ``0 <= x <= 2**-24``)."""
    return ops.clip(0.5 * x + 0.5, 0.0, 1.0)


def _round_or_draw(v, u):
    """tf.round (half to even), or stochastic rounding with draws ``u``."""
    return ops.round(v) if u is None else _stochastic_codes(v, u)


def _hard_sigmoid_window(x, dtype):
    """The gradient of :func:`_hard_sigmoid` over 0.5: 1 where its clip passes (inclusive, as
    ``tf.clip_by_value``'s gradient)."""
    h = 0.5 * x + 0.5
    return ops.cast((h >= 0.0) & (h <= 1.0), dtype)


def _rounded_curve(x, u, m, low, lim, p_of, dp_of):
    """QKeras's quantized curves (``quantized_tanh``, ``quantized_sigmoid``):
    ``clip(round(p(x) m) / m, low, lim)`` (``round`` half to even, or stochastic with the draws
    ``u``), with the gradient ``dp(x)`` where the rounded value lies inside the clip (inclusive,
    as ``tf.clip_by_value``'s gradient) and 0 outside."""

    def forward(v):
        return ops.clip(_round_or_draw(p_of(v) * m, u) / m, low, lim)

    def backward(v, dy):
        r = _round_or_draw(p_of(v) * m, u) / m
        return dy * dp_of(v, dy.dtype) * ops.cast((r >= low) & (r <= lim), dy.dtype)

    return _custom(forward, backward)(x)


@_register("quantized_bits")
class QuantizedBits(_Stochastic, Quantizer):
    r"""QKeras ``quantized_bits``: a fixed-point grid with a round-through estimator.

    With ``alpha=None``:

    .. math::
        q(x) = \mathrm{clip}\big(\mathrm{round}(x / \delta), c_{min}, c_{max}\big) \cdot \delta
        \qquad \frac{\partial q}{\partial x} = 1

    step :math:`\delta = 2^{integer - bits + keep\_negative}`, codes
    :math:`c \in [-2^{b'} + symmetric, 2^{b'} - 1]` (:math:`b' = bits - keep\_negative`;
    :math:`c_{min} = 0` when ``keep_negative`` is False), rounding half to even: it is
    ``ap_fixed<bits, integer + keep_negative>`` with ``rounding``/``overflow`` modes (defaults
    ``RND_CONV`` and ``SAT``, ``SAT_SYM`` when symmetric); both may be set to any ap_fixed
    mode. ``quantized_bits(1, I)`` with ``keep_negative`` is QKeras' binary case
    :math:`q(x) = \mathrm{sign}(x)` (``sign(0) = +1``) whatever ``I``.

    ``alpha`` a number (or one number per channel of the last axis): :math:`q(x) = \alpha \cdot
    q_{None}(x)`, gradient 1.

    ``alpha="auto"`` / ``"auto_po2"`` (QKeras' per-channel scale; symmetric, signed): with
    :math:`x' = x / 2^{integer}`, :math:`M = 2^{bits-1} - 1` and maxima/means over all axes but
    ``scale_axis`` (default the last), start from :math:`s = 2 \max |x'| / (2M)` and set

    .. math::
        z = \mathrm{sign}(x') \min(\lfloor |x'|/s + \tfrac12 \rfloor, M), \qquad
        q(x) = 2^{integer} \, s \, z, \qquad \frac{\partial q}{\partial x} = 1

    ``"auto"`` keeps that float scale (so the largest :math:`|x|` of each channel maps to
    itself). ``"auto_po2"`` first rounds :math:`s` to :math:`2^{\mathrm{round}(\log_2(s + \epsilon))}`,
    then five times recomputes :math:`z` and
    :math:`s = 2^{\mathrm{round}(\log_2(\overline{x'z} / (\overline{zz} + \epsilon) + \epsilon))}`.
    As in QKeras 0.9.0, a 1-D tensor takes its maximum over the whole tensor but its
    ``auto_po2`` refinement over no axis (one scale per element). ``keep_negative=False``
    (which QKeras ignores there), ``bits < 2``, rounding/overflow modes and stochastic rounding
    do not apply and are refused.

    ``use_stochastic_rounding``: with ``training=True`` the codes round up with probability
    equal to their fractional part (unbiased, on the same grid, overflow mode unchanged),
    drawn from the quantizer's ``keras.random.SeedGenerator(seed)``; otherwise as above.

    Hardware: ``fixed`` (``binary`` for the 1-bit case); ``scaled`` with a numeric alpha
    (scale alpha, base ``fixed``) or "auto" (base ``grid``: codes ``int<bits>`` times a
    per-channel scale, a power of two for ``"auto_po2"``, that depends on the tensor:
    ``hardware(x)``/``scale(x)``).
    """

    def __init__(
        self,
        bits: int = 8,
        integer: int = 0,
        symmetric: bool = False,
        keep_negative: bool = True,
        alpha=None,
        rounding: str = "RND_CONV",
        overflow: str | None = None,
        use_stochastic_rounding: bool = False,
        scale_axis: int | None = None,
        seed: int | None = None,
    ):
        alpha = _check_alpha("quantized_bits", alpha)
        if rounding not in ROUNDING_MODES:
            raise ValueError(f"quantized_bits rounding {rounding!r} is unknown; use one of {', '.join(ROUNDING_MODES)}")
        if overflow is not None and overflow not in OVERFLOW_MODES:
            raise ValueError(f"quantized_bits overflow {overflow!r} is unknown; use one of {', '.join(OVERFLOW_MODES)}")
        if int(bits) < 1 or int(bits) - bool(keep_negative) < 0:
            raise ValueError(f"quantized_bits(bits={bits}) needs at least 1 bit (2 when keep_negative)")
        if isinstance(alpha, str):
            if int(bits) < 2:
                raise ValueError(f"quantized_bits(bits={bits}, alpha={alpha!r}) needs at least 2 bits")
            if not keep_negative:
                raise ValueError(f"quantized_bits(alpha={alpha!r}) is always signed in QKeras; drop keep_negative=False")
            if use_stochastic_rounding:
                raise ValueError(
                    f"quantized_bits(alpha={alpha!r}) does not round stochastically in QKeras; drop use_stochastic_rounding"
                )
            if rounding != "RND_CONV" or overflow is not None:
                raise ValueError(
                    f"quantized_bits(alpha={alpha!r}) rounds half away from zero and saturates "
                    "symmetrically; drop rounding/overflow"
                )
        self.bits = int(bits)
        self.integer = int(integer)
        self.symmetric = bool(symmetric)
        self.keep_negative = bool(keep_negative)
        self.alpha = alpha
        self.rounding = rounding
        self.overflow = overflow
        self.scale_axis = None if scale_axis is None else int(scale_axis)
        self._init_random(use_stochastic_rounding, seed)

    @property
    def _binary(self) -> bool:
        return self.keep_negative and self.bits == 1

    @property
    def type(self) -> FixedType:
        """The grid of the unscaled values (``int<2>`` for the 1-bit binary case)."""
        if self._binary:
            return INT2
        overflow = self.overflow or ("SAT_SYM" if self.symmetric and self.keep_negative else "SAT")
        return FixedType(self.bits, self.integer + self.keep_negative, self.keep_negative, self.rounding, overflow)

    @property
    def _auto_type(self) -> FixedType:
        return FixedType(self.bits, self.bits, True, "RND_INF", "SAT_SYM")

    def _auto(self, x):
        """(z, total scale) of the "auto" path: q(x) = scale * z (QKeras 0.9.0's numbers)."""
        axes = _qkeras_axes(len(x.shape), self.scale_axis)
        m_i = 2.0**self.integer
        x = x / m_i
        levels = 2 * (2 ** (self.bits - 1) - 1)  # QKeras forces symmetric with a string alpha
        cap = levels / 2
        # max * 2 / levels in float64, rounded once: XLA would multiply by 1/levels in float32
        top = ops.max(ops.abs(x), axis=(0,) if axes is None else axes, keepdims=True)
        scale = ops.cast(ops.cast(top, "float64") * 2.0 / levels, x.dtype)

        def codes(scale):
            a = ops.abs(x) / scale
            v = ops.floor(a)  # floor(a + 1/2) without rounding a + 1/2 (0.49999997 + 0.5 is 1.0)
            v = v + ops.cast(a - v >= 0.5, v.dtype)
            return ops.sign(x) * ops.where(v < cap, v, ops.full_like(v, cap))

        if self.alpha == "auto_po2":
            scale = _po2(scale)
            for _ in range(5):
                z = codes(scale)
                scale = _qkeras_scale("auto_po2", x, z, axes)
        else:
            z = codes(scale)
        return z, scale * m_i

    def scale(self, x):
        """The scale multiplying the unscaled grid values for the tensor ``x``."""
        if isinstance(self.alpha, str):
            return self._auto(ops.stop_gradient(_tensor(x)))[1]
        return 1.0 if self.alpha is None else _alpha_tensor(self.alpha, _tensor(x).dtype)

    def _unscaled(self, x, training):
        u = None if self._binary else self._draws(x, training)
        t = self.type
        return _sign if self._binary else (lambda v: fixed_quantize(v, t, u))

    def __call__(self, x, training=None):
        x = _tensor(x)
        if isinstance(self.alpha, str):
            z, s = self._auto(ops.stop_gradient(x))
            return _ste_identity(lambda v: s * z)(x)
        q = self._unscaled(x, training)
        if self.alpha is not None:
            a = _alpha_tensor(self.alpha, x.dtype)
            return _ste_identity(lambda v: a * q(v))(x)
        return _ste_identity(q)(x)

    def split(self, x, training=None):
        """With an alpha: the unscaled values (``z``, or the ``alpha=None`` values) with gradient
        ``1 / s``, and the scale ``s``; ``rescale(*split(x))`` is ``q(x)`` bit for bit."""
        if self.alpha is None:
            return self(x, training=training), None
        x = _tensor(x)
        if isinstance(self.alpha, str):
            z, s = self._auto(ops.stop_gradient(x))
            return _ste_over(lambda v: z, s)(x), s
        a = _alpha_tensor(self.alpha, x.dtype)
        return _ste_over(self._unscaled(x, training), a)(x), a

    def hardware(self, x=None) -> forms.Form:
        if isinstance(self.alpha, str):
            axis = -1 if self.scale_axis is None else self.scale_axis
            scale = None if x is None else _channel_scale(self.scale(x), axis)
            return forms.Scaled(forms.Grid(self._auto_type), scale, axis)
        base = forms.Binary() if self._binary else forms.Fixed(self.type)
        if self.alpha is None:
            return base
        scale = _alpha_value(self.alpha)
        if np.all(np.asarray(scale, dtype=np.float64) == 1.0):  # alpha=1 (hls4ml's tutorials): x / 1 * 1 is x
            return base
        return forms.Scaled(base, scale, axis=-1 if isinstance(scale, tuple) else None)

    def get_config(self):
        return {
            "bits": self.bits,
            "integer": self.integer,
            "symmetric": self.symmetric,
            "keep_negative": self.keep_negative,
            "alpha": self.alpha,
            "rounding": self.rounding,
            "overflow": self.overflow,
            "use_stochastic_rounding": self.use_stochastic_rounding,
            "scale_axis": self.scale_axis,
            "seed": self.seed,
        }


@_register("quantized_relu")
class QuantizedRelu(_Stochastic, Quantizer):
    r"""QKeras ``quantized_relu``: a ReLU on an unsigned fixed-point grid.

    With :math:`b = bits - [\texttt{negative\_slope} \ne 0]`, :math:`m = 2^b`,
    :math:`m_i = 2^{integer}`, ``round`` half to even (``use_sigmoid=0``, slope 0):

    .. math::
        q(x) = m_i \cdot \mathrm{clip}\Big(\frac{\mathrm{round}(x m / m_i)}{m}, 0, 1 - \frac1m\Big)

    which is ``ap_ufixed<bits, integer, RND_CONV, SAT>``. With a power-of-two
    ``negative_slope`` :math:`\sigma > 0` the negative side adds
    :math:`m_i \sigma \, \mathrm{clip}(\mathrm{round}(\sigma x m / m_i) / (\sigma m), -1, 0)`.
    With ``use_sigmoid=1``, :math:`p = m \cdot \mathrm{hard\_sigmoid}(x / m_i)` and
    :math:`q(x) = m_i \cdot \mathrm{clip}(2\,\mathrm{round}(p)/m - 1, 0, 1 - 1/m)` (plus
    :math:`m_i \sigma\, \mathrm{clip}(2\,\mathrm{round}(\sigma p)/(\sigma m) - 1, -1, 0)` with a slope),
    rounding the exact :math:`p` (QKeras' float32 :math:`x/2 + 1/2` can round onto a tie).

    Gradient (the STE path :math:`\mathrm{relu}(x, \sigma)` held constant above the bound):

    .. math::
        \frac{\partial q}{\partial x} = \begin{cases} 1 & 0 < x \le u \\ \sigma & x \le 0 \\
        0 & x > u \end{cases}

    with :math:`u = m_i - m_i/m` (``is_quantized_clip``, the default), else
    ``relu_upper_bound`` (or :math:`+\infty` when None). With ``is_quantized_clip=False`` and a
    non-zero ``relu_upper_bound``, QKeras also clips the output: :math:`q \leftarrow \min(q,
    \texttt{relu\_upper\_bound})`. ``use_stochastic_rounding``: with
    ``training=True`` each ``round`` rounds up with probability equal to the fractional part.
    Hardware: ``fixed`` (``ap_ufixed<bits, integer, RND_CONV, SAT>``, a plain conversion);
    ``grid`` with ``use_sigmoid``, a negative slope (signed then) or an output clip below the
    grid's top, which are not conversions.
    """

    def __init__(
        self,
        bits: int = 8,
        integer: int = 0,
        use_sigmoid: int = 0,
        negative_slope: float = 0.0,
        use_stochastic_rounding: bool = False,
        relu_upper_bound: float | None = None,
        is_quantized_clip: bool = True,
        seed: int | None = None,
    ):
        slope = float(negative_slope)
        if slope < 0 or (slope != 0 and math.log2(slope) != int(math.log2(slope))):
            raise ValueError(f"quantized_relu(negative_slope={negative_slope}) must be 0 or a power of two")
        if int(bits) - (slope != 0) < 1:
            raise ValueError(f"quantized_relu(bits={bits}) needs at least 1 bit (2 with a negative slope)")
        self.bits = int(bits)
        self.integer = int(integer)
        self.use_sigmoid = int(use_sigmoid)
        self.negative_slope = slope
        self.relu_upper_bound = None if relu_upper_bound is None else float(relu_upper_bound)
        self.is_quantized_clip = bool(is_quantized_clip)
        self._init_random(use_stochastic_rounding, seed)

    def _consts(self):
        b = self.bits - (self.negative_slope != 0)
        return 2.0**b, 2.0**self.integer, b

    def _forward(self, x, u):
        m, m_i, _ = self._consts()
        s = self.negative_slope
        if self.use_sigmoid:
            if u is None:
                # round(m * hard_sigmoid(x / m_i)) = clip(round(y + m/2), 0, m) with y = x m / (2 m_i)
                # exactly (the sum's own rounding is undone; rounding is monotone, so it commutes with a clip)
                y = x * (m / (2.0 * m_i))
                rp = ops.clip(_round_conv_sum(y, m / 2.0), 0.0, m)
                rps = None if s == 0 else ops.clip(_round_conv_sum(y * s, m * s / 2.0), 0.0, float(round(m * s)))
            else:
                p = _hard_sigmoid(x / m_i) * m
                rp, rps = _round_or_draw(p, u), (None if s == 0 else _round_or_draw(p * s, u))
            xq = m_i * ops.clip(2.0 * (rp / m) - 1.0, 0.0, 1.0 - 1.0 / m)
            if s > 0:
                neg = ops.clip(2.0 * (rps * (1.0 / (s * m))) - 1.0, -1.0, 0.0)
                xq = xq + m_i * s * neg
            return xq
        p = x * m / m_i
        xq = m_i * ops.clip(_round_or_draw(p, u) / m, 0.0, 1.0 - 1.0 / m)
        if s > 0:
            xq = xq + m_i * s * ops.clip(_round_or_draw(p * s, u) * (1.0 / (s * m)), -1.0, 0.0)
        return xq

    def _output_bound(self):
        """QKeras also clips the quantized output to ``relu_upper_bound`` (when it is set,
        non-zero, and ``is_quantized_clip`` is False)."""
        return self.relu_upper_bound if self.relu_upper_bound and not self.is_quantized_clip else None

    def _upper(self):
        if self.is_quantized_clip:
            m, m_i, b = self._consts()
            return m_i - 2.0 ** (self.integer - b)
        return self.relu_upper_bound

    def __call__(self, x, training=None):
        x = _tensor(x)
        u = self._draws(x, training)
        slope, upper, bound = self.negative_slope, self._upper(), self._output_bound()

        def forward(v):
            xq = self._forward(v, u)
            return xq if bound is None else ops.minimum(xq, bound)

        return _custom(forward, lambda v, dy: dy * _relu_slope_grad(v, slope, upper))(x)

    def hardware(self, x=None) -> forms.Form:
        m, m_i, b = self._consts()
        bound = self._output_bound()
        if bound is not None and bound < m_i - m_i / m:
            if bound * m / m_i != math.floor(bound * m / m_i):
                raise NoHardwareForm(
                    f"quantized_relu(relu_upper_bound={bound}) clips its outputs to {bound}, which is off its "
                    f"grid (step {m_i / m}); use a bound on the grid or is_quantized_clip=True"
                )
            grid = True  # min(conversion, bound): on the grid, but not a plain conversion
        else:
            grid = False
        if self.negative_slope == 0:
            t = FixedType(self.bits, self.integer, False, "RND_CONV", "SAT")
            return forms.Grid(t) if self.use_sigmoid or grid else forms.Fixed(t)
        s = self.negative_slope
        lsb_exp = min(self.integer - b, self.integer + int(math.log2(s)))
        t = FixedType.for_range(-m_i * s, m_i - m_i / m, lsb_exp)
        return forms.Grid(t.replace(rounding="RND_CONV", overflow="SAT"))

    def get_config(self):
        return {
            "bits": self.bits,
            "integer": self.integer,
            "use_sigmoid": self.use_sigmoid,
            "negative_slope": self.negative_slope,
            "use_stochastic_rounding": self.use_stochastic_rounding,
            "relu_upper_bound": self.relu_upper_bound,
            "is_quantized_clip": self.is_quantized_clip,
            "seed": self.seed,
        }


@_register("quantized_tanh")
class QuantizedTanh(_Stochastic, Quantizer):
    r"""QKeras ``quantized_tanh``: :math:`m = 2^{bits - 1}`, :math:`l = -1 + [\texttt{symmetric}]/m`,

    .. math::
        p = \begin{cases} \tanh(x) & \texttt{use\_real\_tanh} \\
        2\,\mathrm{clip}(x/2 + 1/2, 0, 1) - 1 & \text{else (hard tanh)} \end{cases}, \qquad
        q(x) = \mathrm{clip}\Big(\frac{\mathrm{round}(p m)}{m}, l, 1 - \frac1m\Big)

    (QKeras 0.9.0's default ``symmetric=False`` keeps -1 as an output.) The hard tanh is
    :math:`\mathrm{clip}(x, -1, 1)` exactly: QKeras' float32 :math:`x/2 + 1/2` can round onto a
    tie of :math:`pm` (a value within an ulp of the tie, rounded the other way there).

    .. math::
        \frac{\partial q}{\partial x} = [\,l \le \mathrm{round}(pm)/m \le 1 - 1/m\,] \cdot
        \begin{cases} 1 - \tanh^2(x) & \texttt{use\_real\_tanh} \\
        [\,0 \le x/2 + 1/2 \le 1\,] & \text{else} \end{cases}

    (``round`` half to even, or stochastic with ``training=True``; the clip windows are
    inclusive, as ``tf.clip_by_value``'s gradient). Hardware: ``grid`` of
    ``fixed<bits, 1, RND_CONV, SAT>`` (``SAT_SYM`` when symmetric; values on it, but tanh is
    not a conversion).
    """

    def __init__(
        self,
        bits: int = 8,
        use_stochastic_rounding: bool = False,
        symmetric: bool = False,
        use_real_tanh: bool = False,
        seed: int | None = None,
    ):
        if int(bits) < 1:
            raise ValueError(f"quantized_tanh(bits={bits}) needs at least 1 bit")
        self.bits = int(bits)
        self.symmetric = bool(symmetric)
        self.use_real_tanh = bool(use_real_tanh)
        self._init_random(use_stochastic_rounding, seed)

    def __call__(self, x, training=None):
        x = _tensor(x)
        u = self._draws(x, training)
        m = 2.0 ** (self.bits - 1)
        lim = 1.0 - 1.0 / m
        low = -1.0 + float(self.symmetric) / m

        def p_of(v):
            # the hard tanh 2 clip(v/2 + 1/2, 0, 1) - 1 is clip(v, -1, 1); computed as written,
            # v/2 + 1/2 rounds in float32 and can land on a tie of round(p m)
            return ops.tanh(v) if self.use_real_tanh else ops.clip(v, -1.0, 1.0)

        def dp_of(v, dtype):
            return 1.0 - ops.tanh(v) * ops.tanh(v) if self.use_real_tanh else _hard_sigmoid_window(v, dtype)

        return _rounded_curve(x, u, m, low, lim, p_of, dp_of)

    def hardware(self, x=None) -> forms.Form:
        return forms.Grid(FixedType(self.bits, 1, True, "RND_CONV", "SAT_SYM" if self.symmetric else "SAT"))

    def get_config(self):
        return {
            "bits": self.bits,
            "use_stochastic_rounding": self.use_stochastic_rounding,
            "symmetric": self.symmetric,
            "use_real_tanh": self.use_real_tanh,
            "seed": self.seed,
        }


@_register("binary_tanh")
class BinaryTanh(Quantizer):
    r"""QKeras ``binary_tanh``: :math:`q(x) = 2\,\mathrm{round}(\mathrm{hard\_sigmoid}(x)) - 1`,
    :math:`\mathrm{hard\_sigmoid}(x) = \mathrm{clip}(x/2 + 1/2, 0, 1)` in float32, ``round`` half to
    even: -1 or +1, and **-1 at 0** (0.5 rounds to 0), where ``ste_sign`` and QKeras's
    ``binary`` give +1; also -1 for the positive ``x <= 2**-24``, where ``x/2 + 1/2`` rounds to
    0.5 in float32. Gradient (QKeras's round-through STE of ``2 hard_sigmoid - 1``):

    .. math::
        \frac{\partial q}{\partial x} = [\,-1 \le x \le 1\,]

    Hardware: ``binary`` (freeze places its threshold from the Keras function itself).
    """

    def __call__(self, x, training=None):
        forward = lambda v: 2.0 * ops.round(_hard_sigmoid(v)) - 1.0
        return _custom(forward, lambda v, dy: dy * _hard_sigmoid_window(v, dy.dtype))(_tensor(x))

    def hardware(self, x=None) -> forms.Form:
        return forms.Binary()

    def get_config(self):
        return {}


@_register("quantized_sigmoid")
class QuantizedSigmoid(_Stochastic, Quantizer):
    r"""QKeras ``quantized_sigmoid``: :math:`m = 2^{bits}`, :math:`l = [\texttt{symmetric}]/m`,

    .. math::
        p = \begin{cases} \sigma(x) & \texttt{use\_real\_sigmoid} \\
        \mathrm{clip}(x/2 + 1/2, 0, 1) & \text{else (QKeras's hard sigmoid, in float32)} \end{cases},
        \qquad q(x) = \mathrm{clip}\Big(\frac{\mathrm{round}(p m)}{m}, l, 1 - \frac1m\Big)

    .. math::
        \frac{\partial q}{\partial x} = [\,l \le \mathrm{round}(pm)/m \le 1 - 1/m\,] \cdot
        \begin{cases} \sigma(x)(1 - \sigma(x)) & \texttt{use\_real\_sigmoid} \\
        \tfrac12 [\,0 \le x/2 + 1/2 \le 1\,] & \text{else} \end{cases}

    (``round`` half to even, or stochastic with ``training=True``.) Hardware: ``grid`` of
    ``ufixed<bits, 0, RND_CONV, SAT>`` (the values :math:`k/m`; the sigmoid is not a conversion,
    so freeze derives its thresholds from the Keras function).
    """

    def __init__(
        self,
        bits: int = 8,
        symmetric: bool = False,
        use_real_sigmoid: bool = False,
        use_stochastic_rounding: bool = False,
        seed: int | None = None,
    ):
        if int(bits) < 1:
            raise ValueError(f"quantized_sigmoid(bits={bits}) needs at least 1 bit")
        self.bits = int(bits)
        self.symmetric = bool(symmetric)
        self.use_real_sigmoid = bool(use_real_sigmoid)
        self._init_random(use_stochastic_rounding, seed)

    def __call__(self, x, training=None):
        x = _tensor(x)
        u = self._draws(x, training)
        m = 2.0**self.bits
        low, lim = float(self.symmetric) / m, 1.0 - 1.0 / m

        def p_of(v):
            return ops.sigmoid(v) if self.use_real_sigmoid else _hard_sigmoid(v)

        def dp_of(v, dtype):
            if self.use_real_sigmoid:
                return ops.sigmoid(v) * (1.0 - ops.sigmoid(v))
            return 0.5 * _hard_sigmoid_window(v, dtype)

        return _rounded_curve(x, u, m, low, lim, p_of, dp_of)

    def hardware(self, x=None) -> forms.Form:
        return forms.Grid(FixedType(self.bits, 0, False, "RND_CONV", "SAT"))

    def get_config(self):
        return {
            "bits": self.bits,
            "symmetric": self.symmetric,
            "use_real_sigmoid": self.use_real_sigmoid,
            "use_stochastic_rounding": self.use_stochastic_rounding,
            "seed": self.seed,
        }


def _no_stochastic(name, use):
    if use:
        raise ValueError(
            f"{name}(use_stochastic_rounding=True) is not supported; edgebnn rounds stochastically "
            "only in quantized_bits, quantized_relu, quantized_tanh, quantized_sigmoid, quantized_po2 and quantized_relu_po2"
        )


@_register("binary")
class Binary(Quantizer):
    r"""QKeras ``binary``: :math:`k = \mathrm{sign}(x)` with ``sign(0) = +1``
    (:math:`k = (\mathrm{sign}(x) + 1)/2 \in \{0, 1\}` with ``use_01``), and

    .. math::
        q(x) = \alpha k, \qquad \frac{\partial q}{\partial x} = \begin{cases}
        1 - \tanh^2(x) & \alpha = \text{None (QKeras' tanh STE path)} \\ 1 & \text{else} \end{cases}

    :math:`\alpha` is 1 when None, a number (or one per channel of the last axis), or with
    ``"auto"``/``"auto_po2"`` per output channel (last axis; as in QKeras, a 1-D tensor gets
    one scale per element)
    :math:`\alpha = \overline{xk} / (\overline{kk} + \epsilon)`, rounded to
    :math:`2^{\mathrm{round}(\log_2(\alpha + \epsilon))}` for ``"auto_po2"``.
    Hardware: ``binary`` (``unipolar`` with ``use_01``), ``scaled`` with an alpha.
    """

    def __init__(self, use_01: bool = False, alpha=None, use_stochastic_rounding: bool = False):
        _no_stochastic("binary", use_stochastic_rounding)
        self.use_01 = bool(use_01)
        self.alpha = _check_alpha("binary", alpha)
        self.use_stochastic_rounding = False

    def _k(self, x):
        k = _sign(x)
        return (k + 1.0) / 2.0 if self.use_01 else k

    def scale(self, x):
        x = _tensor(x)
        if isinstance(self.alpha, str):
            x = ops.stop_gradient(x)
            return _qkeras_scale(self.alpha, x, self._k(x), _qkeras_axes(len(x.shape), None))
        return 1.0 if self.alpha is None else _alpha_tensor(self.alpha, x.dtype)

    def __call__(self, x, training=None):
        x = _tensor(x)
        if self.alpha is None:
            return _custom(self._k, lambda v, dy: dy * (1.0 - ops.tanh(v) * ops.tanh(v)))(x)
        s = self.scale(x)
        return _ste_identity(lambda v: s * self._k(v))(x)

    def split(self, x, training=None):
        """With an alpha: ``k`` with gradient ``1 / alpha``, and ``alpha``."""
        if self.alpha is None:
            return self(x, training=training), None
        x = _tensor(x)
        s = self.scale(x)
        return _ste_over(self._k, s)(x), s

    def hardware(self, x=None) -> forms.Form:
        return _scaled_hardware(self, forms.Unipolar() if self.use_01 else forms.Binary(), x)

    def get_config(self):
        return {"use_01": self.use_01, "alpha": self.alpha, "use_stochastic_rounding": False}


def _scaled_hardware(q, base: forms.Form, x) -> forms.Form:
    """The form of a quantizer ``alpha * k`` with ``k`` of the form ``base``."""
    if q.alpha is None:
        return base
    if isinstance(q.alpha, str):
        scale = None if x is None else _channel_scale(q.scale(x), -1)
        return forms.Scaled(base, scale, axis=-1)
    scale = _alpha_value(q.alpha)
    return forms.Scaled(base, scale, axis=-1 if isinstance(scale, tuple) else None)


@_register("ternary")
class Ternary(Quantizer):
    r"""QKeras ``ternary``.

    With ``alpha`` None or a number (``threshold`` :math:`T`, default 0.33):

    .. math::
        k = [\,|x| \ge T\,] \cdot \mathrm{sign}(x) \in \{-1, 0, +1\}, \qquad q(x) = \alpha k

    (:math:`|x| = T` maps to ±1; ``sign(0) = 0``). Gradient :math:`1 - \tanh^2(x)` when
    ``alpha`` is None (QKeras' tanh STE path), else 1.

    With ``alpha="auto"``/``"auto_po2"`` (for weights; ``threshold`` must be None), per output
    channel (last axis; as in QKeras, a 1-D tensor takes its maximum over the whole tensor
    and one refined scale per element): :math:`s = \tfrac23 \max|x|` (a power
    of two for ``"auto_po2"``), then ``number_of_unrolls`` times

    .. math::
        k = [\,|s \cdot \mathrm{round}(x/s)| \ge s/2\,] \cdot \mathrm{sign}(x), \qquad
        s = \overline{xk} / (\overline{kk} + \epsilon) \;(\text{power of two for "auto\_po2"})

    and :math:`q(x) = s k`, gradient 1. Hardware: ``ternary``, ``scaled`` with an alpha.
    """

    def __init__(
        self, alpha=None, threshold: float | None = None, use_stochastic_rounding: bool = False, number_of_unrolls: int = 5
    ):
        _no_stochastic("ternary", use_stochastic_rounding)
        self.alpha = _check_alpha("ternary", alpha)
        if isinstance(self.alpha, str) and threshold is not None:
            raise ValueError(f"ternary(alpha={alpha!r}) computes its own threshold; drop threshold={threshold!r}")
        if int(number_of_unrolls) < 1:
            raise ValueError(f"ternary(number_of_unrolls={number_of_unrolls}) needs at least 1")
        self.threshold = None if threshold is None else float(threshold)
        self.use_stochastic_rounding = False
        self.number_of_unrolls = int(number_of_unrolls)

    def _auto(self, x):
        nd = len(x.shape)
        axes = _qkeras_axes(nd, None)
        m = ops.max(ops.abs(x), axis=tuple(range(nd)) if nd <= 1 else axes, keepdims=True)
        scale = 2.0 * m / 3.0
        if self.alpha == "auto_po2":
            scale = _po2(scale)
        for _ in range(self.number_of_unrolls):
            v = scale * ops.round(x / scale)
            k = ops.cast(ops.abs(v) >= scale / 2.0, x.dtype) * ops.sign(x)
            scale = _qkeras_scale(self.alpha, x, k, axes)
        return k, scale

    def scale(self, x):
        x = _tensor(x)
        if isinstance(self.alpha, str):
            return self._auto(ops.stop_gradient(x))[1]
        return 1.0 if self.alpha is None else _alpha_tensor(self.alpha, x.dtype)

    def __call__(self, x, training=None):
        x = _tensor(x)
        if isinstance(self.alpha, str):
            k, s = self._auto(ops.stop_gradient(x))
            return _ste_identity(lambda v: s * k)(x)
        k_of = self._k_of()
        if self.alpha is None:
            return _custom(k_of, lambda v, dy: dy * (1.0 - ops.tanh(v) * ops.tanh(v)))(x)
        a = _alpha_tensor(self.alpha, x.dtype)
        return _ste_identity(lambda v: a * k_of(v))(x)

    def _k_of(self):
        t = 0.33 if self.threshold is None else self.threshold
        return lambda v: ops.cast(ops.abs(v) >= t, v.dtype) * ops.sign(v)

    def split(self, x, training=None):
        """With an alpha: ``k`` with gradient ``1 / s``, and the scale ``s``."""
        if self.alpha is None:
            return self(x, training=training), None
        x = _tensor(x)
        if isinstance(self.alpha, str):
            k, s = self._auto(ops.stop_gradient(x))
            return _ste_over(lambda v: k, s)(x), s
        a = _alpha_tensor(self.alpha, x.dtype)
        return _ste_over(self._k_of(), a)(x), a

    def hardware(self, x=None) -> forms.Form:
        return _scaled_hardware(self, forms.Ternary(), x)

    def get_config(self):
        return {
            "alpha": self.alpha,
            "threshold": self.threshold,
            "use_stochastic_rounding": False,
            "number_of_unrolls": self.number_of_unrolls,
        }


def _po2_exponents(x_abs, min_exp, max_exp, max_value, quadratic, log2_rounding, u=None):
    """QKeras ``_clip_power_of_two``: the exponent of each |x| (float tensor); with uniform
    draws ``u`` (stochastic rounding, training only) the exponent of the power of two below or
    above, the upper one with probability ``(a - 2**lo) / (2**hi - 2**lo)``, so that the
    outputs' mean is ``a`` (QKeras's ``stochastic_round_po2``)."""
    small = x_abs < _EPS
    xf = ops.where(small, ops.full_like(x_abs, _EPS), x_abs)
    if max_value is not None:
        xf = ops.where(xf >= max_value, ops.full_like(xf, max_value), xf)
    factor = 2.0 if quadratic else 1.0
    xi = ops.sqrt(xf) if quadratic else xf
    lg = ops.log(xi) / _LN2
    if u is not None:
        near = ops.round(ops.log(xi + _EPS) / _LN2)
        lo = ops.where(ops.power(2.0, near) > xi, near - 1.0, near)
        low, high = ops.power(2.0, lo), ops.power(2.0, lo + 1.0)
        e = ops.where(xi < low + u * (high - low), lo, lo + 1.0)
    else:
        e = ops.floor(lg) if log2_rounding == "floor" else ops.round(lg)
    e = factor * ops.clip(e, float(min_exp), float(max_exp))
    return ops.where(small, ops.full_like(e, float(min_exp)), e)


def _eagerly():
    """A context in which Keras ops run eagerly, also inside a function TensorFlow traces."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.init_scope()
    return contextlib.nullcontext()


def _need_exponent_sign(max_value) -> int:
    if max_value is not None and max_value < 0:
        raise ValueError(f"po2 max_value={max_value} must be non-negative")
    return 1 if max_value is None or max_value > 1 else 0


class _Po2Base(_Stochastic, Quantizer):
    def _common(self, max_value, use_stochastic_rounding, quadratic_approximation, log2_rounding, seed):
        if log2_rounding not in ("rnd", "floor"):
            raise ValueError(f"{self.alias}(log2_rounding={log2_rounding!r}) is unknown; use 'rnd' or 'floor'")
        self.max_value = None if max_value is None else float(max_value)
        self._init_random(use_stochastic_rounding, seed)
        self.quadratic_approximation = bool(quadratic_approximation)
        self.log2_rounding = log2_rounding

    def _exponents(self, x_abs, u=None):
        return _po2_exponents(
            x_abs, self._min_exp, self._max_exp, self.max_value, self.quadratic_approximation, self.log2_rounding, u
        )

    def exponent_range(self) -> tuple[int, int]:
        """The smallest and largest exponent an output can have. Computed eagerly (the largest
        from ``max_value`` by the quantizer's own float32 arithmetic), also when first asked
        inside a traced training step (a layer reads its kernel quantizer's form there)."""
        f = 2 if self.quadratic_approximation else 1
        lo, hi = min(f * self._min_exp, self._min_exp), f * self._max_exp
        if self.max_value is not None:
            with _eagerly():
                top = self._exponents(ops.convert_to_tensor(np.float32([self.max_value])))
                hi = min(hi, int(ops.convert_to_numpy(top)[0]))
        return lo, hi

    def _hardware(self, signed: bool) -> forms.Form:
        lo, hi = self.exponent_range()
        top = 1 << (hi - lo)
        t = FixedType.for_codes(-top if signed else 1, top, lo).replace(rounding="RND_CONV", overflow="SAT")
        return forms.Po2(t, (lo, hi))


@_register("quantized_po2")
class QuantizedPo2(_Po2Base):
    r"""QKeras ``quantized_po2``: the nearest power of two, signed.

    .. math::
        q(x) = \mathrm{sign}(x) \cdot 2^{e(|x|)}, \qquad
        e(a) = \begin{cases} e_{min} & a < \epsilon \\
        \mathrm{clip}(\mathrm{round}(\log_2 \min(a, \texttt{max\_value})), e_{min}, e_{max}) & \text{else}
        \end{cases}
        \qquad \frac{\partial q}{\partial x} = 1

    ``sign(0) = +1`` (so :math:`q(0) = 2^{e_{min}}`), ``round`` half to even (``floor`` with
    ``log2_rounding="floor"``), :math:`\epsilon = 10^{-7}`. With :math:`E = bits - 1 -
    [\texttt{max\_value} \text{ is None or} > 1]`: :math:`e_{min} = -2^E`,
    :math:`e_{max} = 2^E - 1`. ``quadratic_approximation`` rounds :math:`\log_2 \sqrt{a}`
    (even exponents :math:`2\,\mathrm{clip}(\cdot)`, :math:`e_{max}` made even first).
    Hardware: ``po2`` (signed).
    """

    def __init__(
        self,
        bits: int = 8,
        max_value: float | None = None,
        use_stochastic_rounding: bool = False,
        quadratic_approximation: bool = False,
        log2_rounding: str = "rnd",
        seed: int | None = None,
    ):
        self._common(max_value, use_stochastic_rounding, quadratic_approximation, log2_rounding, seed)
        self.bits = int(bits)
        eff = self.bits - 1 - _need_exponent_sign(self.max_value)
        if eff < 0:
            raise ValueError(f"quantized_po2(bits={bits}) has no exponent bits left; use more bits")
        self._min_exp, self._max_exp = -(2**eff), 2**eff - 1
        if self.quadratic_approximation:
            self._max_exp = 2 * (self._max_exp // 2)

    def __call__(self, x, training=None):
        x = _tensor(x)
        u = self._draws(x, training)

        def forward(v):
            return _sign(v) * ops.power(2.0, self._exponents(ops.abs(v), u))

        return _ste_identity(forward)(x)

    def hardware(self, x=None) -> forms.Form:
        return self._hardware(signed=True)

    def get_config(self):
        return {
            "bits": self.bits,
            "max_value": self.max_value,
            "use_stochastic_rounding": self.use_stochastic_rounding,
            "quadratic_approximation": self.quadratic_approximation,
            "log2_rounding": self.log2_rounding,
            "seed": self.seed,
        }


@_register("quantized_relu_po2")
class QuantizedReluPo2(_Po2Base):
    r"""QKeras ``quantized_relu_po2``: a ReLU onto powers of two.

    .. math::
        q(x) = \begin{cases} 2^{e(\max(x, 0))} & x \ge 0 \text{ or } \sigma = 0 \\
        -2^{e(\sigma \cdot (-x))} & x < 0 \end{cases}
        \qquad
        \frac{\partial q}{\partial x} = \begin{cases} 1 & 0 < x \le \texttt{max\_value} \\
        \sigma & x \le 0 \\ 0 & x > \texttt{max\_value} \end{cases}

    with :math:`e` as in :class:`QuantizedPo2` but :math:`e_{min} = -2^E`,
    :math:`e_{max} = 2^E - 1`, :math:`E = bits - [\texttt{max\_value} \text{ is None or} > 1]`.
    Zero is not an output: :math:`q(x) = 2^{e_{min}}` for :math:`x \le 0` when
    :math:`\sigma = 0` (``negative_slope``, 0 or a power of two). Hardware: ``po2``
    (unsigned, signed with a slope).
    """

    def __init__(
        self,
        bits: int = 8,
        max_value: float | None = None,
        negative_slope: float = 0.0,
        use_stochastic_rounding: bool = False,
        quadratic_approximation: bool = False,
        log2_rounding: str = "rnd",
        seed: int | None = None,
    ):
        self._common(max_value, use_stochastic_rounding, quadratic_approximation, log2_rounding, seed)
        slope = float(negative_slope)
        if slope < 0 or (slope != 0 and math.log2(slope) != int(math.log2(slope))):
            raise ValueError(f"quantized_relu_po2(negative_slope={negative_slope}) must be 0 or a power of two")
        self.bits = int(bits)
        self.negative_slope = slope
        eff = self.bits - _need_exponent_sign(self.max_value)
        self._min_exp, self._max_exp = -(2**eff), 2**eff - 1
        if self.quadratic_approximation:
            self._max_exp = 2 * (self._max_exp // 2)

    def __call__(self, x, training=None):
        s = self.negative_slope
        x = _tensor(x)
        u = self._draws(x, training)

        def forward(v):
            pos = ops.power(2.0, self._exponents(ops.relu(v), u))
            if s == 0:
                return pos
            neg = -ops.power(2.0, self._exponents(ops.relu(-v) * s, u))
            return ops.where(v >= 0, pos, neg)

        return _custom(forward, lambda v, dy: dy * _relu_slope_grad(v, s, self.max_value))(x)

    def hardware(self, x=None) -> forms.Form:
        return self._hardware(signed=self.negative_slope != 0)

    def get_config(self):
        return {
            "bits": self.bits,
            "max_value": self.max_value,
            "negative_slope": self.negative_slope,
            "use_stochastic_rounding": self.use_stochastic_rounding,
            "quadratic_approximation": self.quadratic_approximation,
            "log2_rounding": self.log2_rounding,
            "seed": self.seed,
        }


# QKeras' own (snake_case) names
quantized_bits = QuantizedBits
quantized_relu = QuantizedRelu
quantized_tanh = QuantizedTanh
binary = Binary
ternary = Ternary
quantized_po2 = QuantizedPo2
quantized_relu_po2 = QuantizedReluPo2
