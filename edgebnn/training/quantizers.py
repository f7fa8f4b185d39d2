"""Straight-through-estimator quantizers for Keras 3.

Each quantizer is a small serializable object: called on a tensor it returns the quantized
tensor (forward exactly as the hardware computes it) with the gradient of its estimator, and
``hardware()`` names the grid its outputs lie on as a record of :mod:`edgebnn.forms`, which
freeze exports.

String aliases work wherever a quantizer is accepted: ``"ste_sign"``, ``"quantized_bits"``, or
QKeras-style calls such as ``"quantized_bits(8, 0, keep_negative=False)"``.

Families (each class documents its forward and gradient as math):

- larq: ``SteSign``, ``ApproxSign``, ``SwishSign``, ``MagnitudeAwareSign``, ``SteHeaviside``,
  ``SteTern``, ``DoReFa``, ``NoOp`` (larq's numbers, larq's aliases).
- QKeras: ``quantized_bits``, ``quantized_relu``, ``quantized_tanh``, ``binary``, ``ternary``,
  ``quantized_po2``, ``quantized_relu_po2`` (QKeras's numbers; also importable under their
  QKeras snake_case names).
- ``XnorSign`` (XNOR-Net) and ``PartialQuantizer`` (a quantizer on chosen channels only).

A quantizer whose form is ``scaled`` (XNOR, magnitude-aware sign, DoReFa with k > 1, QKeras
``alpha``) also splits its output: ``split(x)`` gives its unscaled values (integer codes on the
form's grid) and its scale, ``rescale(v, s)`` applies the scale as the quantizer does; the
edgebnn layers sum the codes and apply the scale once after (an order freeze replays exactly).

Two deliberate differences from larq/QKeras, both about exactness: the forward value is the
quantized value itself (QKeras computes ``x + stop_gradient(q - x)``, which float32 may round
off the grid), and stochastic rounding happens only when the caller passes ``training=True``
(never from a global learning phase), drawn from a ``keras.random.SeedGenerator`` the quantizer
owns.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import math

import keras
import numpy as np
from keras import ops

from .. import forms
from ..errors import EdgebnnError, did_you_mean
from ..fixed import OVERFLOW_MODES, ROUNDING_MODES, FixedType
from ..forms import INT2

_ALIASES: dict[str, type] = {}

# Keras' backend epsilon, which QKeras adds in its scale and log2 computations
_EPS = 1e-7
_LN2 = float(np.float32(np.log(2.0)))  # QKeras divides a float32 log by np.log(2.0) cast to float32


def _register(*aliases: str):
    def deco(cls):
        cls = keras.saving.register_keras_serializable(package="edgebnn")(cls)
        for alias in aliases:
            _ALIASES[alias] = cls
        cls.alias = min(aliases, key=len)  # what users write: "partial", "dorefa"
        return cls

    return deco


class NoHardwareForm(EdgebnnError, NotImplementedError):
    """The quantizer leaves values off every grid (e.g. ``NoOp``): nothing to export."""


class Quantizer:
    """Base class: ``__call__(x, training=None)`` plus Keras serialization."""

    alias = ""

    def __call__(self, x, training=None):
        raise NotImplementedError

    def hardware(self, x=None) -> forms.Form:
        """The output grid as a record of :mod:`edgebnn.forms`; ``x`` (the tensor quantized) is
        needed only where a scale depends on it."""
        raise NotImplementedError

    def split(self, x, training=None):
        """``(v, s)``: the unscaled values ``v`` (on the grid of ``hardware().type``) and the scale
        ``s`` of a ``scaled`` form, such that :meth:`rescale` ``(v, s)`` is ``q(x)`` in real
        arithmetic and ``rescale(v, s)`` has the gradient of ``q(x)`` (``s`` is None for a form
        without a scale: ``v`` is ``q(x)``). A layer multiplies its integer codes first and
        applies ``s`` once after, an order freeze can replay exactly."""
        return self(x, training=training), None

    def rescale(self, v, s):
        """``v`` (unscaled values, or a sum of products with them) times the scale ``s`` of
        :meth:`split`, as this quantizer applies it (``s * v``)."""
        return v if s is None else s * v

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        """The string a user would write, e.g. ``quantized_bits(4, 1, rounding='RND')``: the alias,
        arguments in order while none is left at its default, then only those that differ from
        it by name; a nested quantizer is its own string. ``get(repr(q)) == q``."""
        config = self.get_config()
        args, positional = [], True
        for name, param in list(inspect.signature(type(self).__init__).parameters.items())[1:]:
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            value = config.get(name, param.default)
            if isinstance(value, dict) and "class_name" in value:
                value = repr(get(value))
            if param.default is not param.empty and _same(value, param.default):
                positional = False
                continue
            args.append(f"{value!r}" if positional else f"{name}={value!r}")
        name = self.alias or type(self).__name__
        return f"{name}({', '.join(args)})" if args else name

    def __eq__(self, other):
        return type(self) is type(other) and self.get_config() == other.get_config()

    def __hash__(self):
        return hash((type(self).__name__, json.dumps(self.get_config(), sort_keys=True, default=repr)))


def _same(value, default) -> bool:
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return list(value) == list(default)
    return (type(value) is type(default) and value == default) or value is default


# --------------------------------------------------------------------------- rounding


def _floor_half(s):
    """``(floor(s), frac(s) > 1/2, frac(s) == 1/2)`` of a float tensor, exact for every value.

    ``s - floor(s)`` is not exact for negative ``s`` (float32: -0.49999997 + 1 rounds to 0.5, a
    false tie), but ``|s| - floor(|s|)`` always is, and for a negative non-integer ``s``,
    ``frac(s) = 1 - frac(|s|)``. NaN and +-inf give ``floor(s)`` and no fraction."""
    a = ops.abs(s)
    fa = a - ops.floor(a)  # exact; NaN for infinities, so no comparison below holds
    half = fa == 0.5
    above = ops.where(s >= 0, fa > 0.5, (fa > 0.0) & (fa < 0.5))
    return ops.floor(s), above, half


def _odd(fl):
    """True where the integer-valued ``fl`` is odd (exact: halving and flooring lose nothing)."""
    return ops.not_equal(fl - 2.0 * ops.floor(fl * 0.5), 0.0)


def _round_codes(s, mode: str):
    """``s`` rounded to integers by an ap_fixed rounding mode (Keras ops), exact for every
    float value; NaN and +-inf come back unchanged."""
    if mode == "TRN":
        return ops.floor(s)
    if mode == "TRN_ZERO":
        return ops.where(s < 0, ops.ceil(s), ops.floor(s))
    fl, up, tie = _floor_half(s)
    if mode == "RND":
        up = up | tie
    elif mode == "RND_ZERO":
        up = up | (tie & (s < 0))
    elif mode == "RND_INF":
        up = up | (tie & (s > 0))
    elif mode == "RND_CONV":
        up = up | (tie & _odd(fl))
    elif mode != "RND_MIN_INF":
        raise ValueError(f"rounding mode {mode!r} is unknown; use one of {', '.join(ROUNDING_MODES)}")
    return fl + ops.cast(up, s.dtype)  # a tie or fraction exists only below 2**23: fl + 1 is exact


def _round_conv_sum(a, c: float):
    """``a + c`` (``c`` a constant) rounded half to even, exact for the real sum while it is
    below 2**22 in magnitude (beyond, the float sum is an integer already).

    ``a + c`` in float32 may round onto a tie (0.5 + 2**-40 is 0.5), so the error of the sum is
    recovered exactly (Knuth's TwoSum) and decides the ties."""
    hi = a + c
    b = hi - a
    err = (a - (hi - b)) + (c - b)
    fl, up, tie = _floor_half(hi)
    up = up | (tie & ((err > 0) | ((err == 0) & _odd(fl))))
    return fl + ops.cast(up, hi.dtype)


def _round_conv_times(v, k: int):
    """``v * (2**k - 1)`` for ``v >= 0`` rounded half to even, exact for the real product.

    The float product may round onto a tie; its error is ``v 2**k - hi - v``, where
    ``d = v 2**k - hi`` is exact (Sterbenz: the two are within a factor of 2) and compared with
    ``v``. Beyond 22 bits (or 1 bit, where the product is exact) it is ``round(v * n)``."""
    n = float(2**k - 1)
    hi = v * n
    if k < 2 or k > 22:
        return ops.round(hi)
    d = v * float(2**k) - hi
    fl, up, tie = _floor_half(hi)
    up = up | (tie & ((d > v) | ((d == v) & _odd(fl))))
    return fl + ops.cast(up, hi.dtype)


def _stochastic_codes(s, u):
    """``floor(s) + [u < frac(s)]`` for ``u ~ U[0, 1)``: rounds up with probability
    ``frac(s)``, so the expected code is ``s`` (unbiased) and every code is a grid neighbour.

    (``s - floor(s)`` may round up for negative ``s``, by at most half an ulp of 1: far below
    the resolution of ``u``; it never leaves the two neighbours, and integers stay put.)"""
    fl = ops.floor(s)
    return fl + ops.cast(u < s - fl, s.dtype)


def _overflow_codes(r, t: FixedType):
    """The overflow mode of ``t`` on integer-valued codes ``r`` (NaN stays NaN; +-inf saturate,
    become 0 under SAT_ZERO and NaN under WRAP)."""
    lo, hi = float(t.min_code), float(t.max_code)
    if t.overflow == "SAT":
        return ops.clip(r, lo, hi)
    if t.overflow == "SAT_SYM":
        return ops.clip(r, -hi if t.signed and t.width > 1 else lo, hi)  # ap_fixed: 1-bit keeps -1
    if t.overflow == "SAT_ZERO":
        return ops.where((r < lo) | (r > hi), ops.zeros_like(r), r)
    if t.sat_bits:
        raise ValueError(f"{t}: WRAP with saturation bits is not supported in training; use SAT")
    # r mod 2**width: the difference below is an integer in [0, span), so exact while it fits
    # the mantissa (width <= 24 in float32); in-range codes are kept as they are (any width)
    span = 2.0**t.width
    m = r - span * ops.floor(r / span)
    if t.signed:
        m = ops.where(m > hi, m - span, m)
    return ops.where((r < lo) | (r > hi), m, r)


# significand bits and exponent bound (every finite value is below 2**emax) of float dtypes
_FLOAT_BITS = {"float16": (11, 16), "bfloat16": (8, 128), "float32": (24, 128), "float64": (53, 1024)}


def fixed_quantize(x, t: FixedType, u=None):
    """Keras-ops twin of :meth:`FixedType.quantize`: the same rounding and overflow modes.

    Exact in float32 for every finite input while codes need at most 24 bits (tests prove it
    mode by mode on all float32 values near every tie and grid point). NaN gives NaN; +-inf
    saturate (SAT, SAT_SYM), give 0 (SAT_ZERO) or NaN (WRAP). With ``u`` (uniform draws in
    [0, 1) of x's shape) the rounding is stochastic instead (:func:`_stochastic_codes`); the
    overflow mode still applies.
    """
    x = ops.convert_to_tensor(x)
    f = t.width - t.integer  # s = x * 2**f: a power-of-two scale is exact but may over/underflow
    bits, emax = _FLOAT_BITS.get(keras.backend.standardize_dtype(x.dtype), (53, 1024))
    # floor(-tiny * 2**f) is -1 (f small enough), but TensorFlow reads a subnormal -tiny as 0
    tiny = _negative_subnormal(x) if u is None and t.rounding == "TRN" and f <= emax - 2 else None
    if f < 0 and u is None and t.rounding == "TRN":
        # a tiny negative x may underflow to -0.0 and floor to 0, not -1:
        # floor(floor(x) * 2**f) == floor(x * 2**f), and floor(x) * 2**f does not underflow
        x = ops.floor(x)
    if f > 0 and t.overflow == "WRAP" and bits - 1 + t.width < emax:
        # a float s with |s| >= 2**(bits - 1 + width) is a multiple of 2**width (wraps to 0), so
        # clamp finite x there rather than let x * 2**f overflow to inf (which wraps to NaN)
        big = 2.0 ** (bits - 1 + t.integer)
        x = ops.where(ops.isfinite(x), ops.clip(x, -big, big), x)
    scale = 2.0**f
    s = x * scale
    r = _round_codes(s, t.rounding) if u is None else _stochastic_codes(s, u)
    if tiny is not None:
        r = ops.where(tiny, -ops.ones_like(r), r)
    return _overflow_codes(r, t) / scale


def _negative_subnormal(x):
    """True where ``x`` is a negative subnormal (None for dtypes other than float32/float64).

    TensorFlow runs with denormals flushed to zero on CPU (eager and XLA alike): every float op
    reads a subnormal as 0, so ``x < 0`` and ``floor(x)`` miss them; only the bits tell."""
    dtype = keras.backend.standardize_dtype(x.dtype)
    if dtype not in ("float32", "float64"):
        return None
    width, mant = (32, 23) if dtype == "float32" else (64, 52)
    b = ops.view(x, f"int{width}")
    sign = -(2 ** (width - 1))  # the bits of -0.0; negative subnormals follow, up to sign + 2**mant - 1
    return (b > sign) & (b < sign + 2**mant)


def _tensor(x):
    """A plain tensor: custom gradients must not capture a variable read inside them."""
    if isinstance(x, keras.Variable):
        return ops.copy(x.value)
    return ops.convert_to_tensor(x)


def _custom(forward, backward):
    """A function of ``x`` with value ``forward(x)`` and gradient ``backward(x, upstream)``."""

    @ops.custom_gradient
    def f(x):
        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return backward(x, upstream)

        return forward(x), grad

    return f


def _ste_identity(q_fn):
    """Forward ``q_fn(x)``, gradient 1 everywhere."""
    return _custom(q_fn, lambda x, dy: dy)


def _ste_over(q_fn, s):
    """Forward ``q_fn(x)``, gradient ``1 / s`` (0 where ``s`` is 0): ``s`` times it has the
    gradient 1 of a quantizer whose straight-through estimator passes the scaled product."""
    return _custom(q_fn, lambda x, dy: ops.divide_no_nan(dy, ops.cast(s, dy.dtype)))


def _sign(x):
    """-1 where x < 0, else +1 (so sign(0) = sign(-0.0) = +1, as larq's ``math.sign``)."""
    return ops.where(x < 0, -ops.ones_like(x), ops.ones_like(x))


def _window(x, clip_value, dtype):
    """1 where ``|x| <= clip_value`` (inclusive, larq), everywhere when clip_value is None."""
    if clip_value is None:
        return ops.ones_like(x, dtype=dtype)
    return ops.cast(ops.abs(x) <= clip_value, dtype)


def _reduce_axes(ndim: int, keep: int | None):
    """All axes but ``keep`` (None: reduce all)."""
    if keep is None:
        return tuple(range(ndim))
    keep = keep % ndim
    return tuple(a for a in range(ndim) if a != keep)


def _qkeras_axes(ndim: int, scale_axis: int | None):
    """The axes QKeras averages over for a per-channel scale: all but ``scale_axis``
    (default: the last, channels_last). None for a 1-D tensor, where QKeras' ``_get_scale``
    averages over nothing: each element gets its own scale."""
    if ndim <= 1:
        return None
    return _reduce_axes(ndim, -1 if scale_axis is None else scale_axis)


def _qkeras_scale(alpha: str, x, q, axes):
    r"""QKeras ``_get_scale``: :math:`s = \overline{xq} / (\overline{qq} + \epsilon)` over ``axes``
    (elementwise, no mean, when ``axes`` is None: QKeras' 1-D case); ``"auto_po2"`` rounds it
    to :math:`2^{\mathrm{round}(\log_2(s + \epsilon))}` (half to even)."""
    if axes is None:
        qx, qq = x * q, q * q
    else:
        qx = ops.mean(x * q, axis=axes, keepdims=True)
        qq = ops.mean(q * q, axis=axes, keepdims=True)
    scale = qx / (qq + _EPS)
    if alpha == "auto_po2":
        scale = _po2(scale)
    return scale


def _po2(s):
    """QKeras' power-of-two rounding of a positive scale: 2**round(log(s + eps) / ln 2)."""
    return ops.power(2.0, ops.round(ops.log(s + _EPS) / _LN2))


def _channel_scale(scale, axis: int | None):
    """A keepdims scale tensor as a Scaled form wants it: a float, or a tuple along ``axis``."""
    s = np.asarray(ops.convert_to_numpy(scale), dtype=np.float64)
    if s.size == 1:
        return float(s.reshape(()))
    return tuple(float(v) for v in np.moveaxis(s, axis, 0).reshape(s.shape[axis], -1)[:, 0])


def _alpha_value(alpha):
    """A user's numeric alpha: a float, or a per-channel tuple along the last axis."""
    if isinstance(alpha, (list, tuple, np.ndarray)):
        return tuple(float(a) for a in np.asarray(alpha, dtype=np.float64).ravel())
    return float(alpha)


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


def _check_alpha(name: str, alpha):
    if alpha is None or alpha in ("auto", "auto_po2"):
        return alpha
    if isinstance(alpha, str):
        raise ValueError(f"{name}(alpha={alpha!r}) is unknown; use None, a number, 'auto' or 'auto_po2'")
    try:
        value = _alpha_value(alpha)
    except (TypeError, ValueError):
        raise ValueError(f"{name}(alpha={alpha!r}) is unknown; use None, a number, 'auto' or 'auto_po2'") from None
    return list(value) if isinstance(value, tuple) else value


def _alpha_tensor(alpha, dtype):
    return ops.convert_to_tensor(np.asarray(alpha, dtype=np.float32), dtype=dtype)


def _replica():
    """Under a ``tf.distribute`` strategy of several replicas (edgebnn.train's replicated loop), a
    function ``(shape, dtype, seed) -> draws`` that folds the replica's index into the seed: every
    replica keeps the same generator state (so the replicas stay identical), yet each replica's
    share of the global batch gets draws of its own instead of the same sequence as the others.
    None otherwise (one device: Keras's own draws, unchanged)."""
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync < 2:
        return None
    index = context.replica_id_in_sync_group

    def draws(shape, dtype, seed):
        # a hash of (seed, replica): seed + [0, replica] would replay the next step's draws
        seed = tf.random.experimental.stateless_fold_in(tf.cast(seed, "int64"), tf.cast(index, "int64"))
        return tf.random.stateless_uniform(shape, seed=seed, dtype=dtype)

    return draws


class _Stochastic:
    """Owns the ``keras.random.SeedGenerator`` of a quantizer with stochastic rounding.

    ``seed`` (an int, or None for Keras' global seeding via ``keras.utils.set_random_seed``)
    is serialized; the generator state advances at every training call."""

    def _init_random(self, use: bool, seed):
        self.use_stochastic_rounding = bool(use)
        self.seed = None if seed is None else int(seed)
        self._seed_generator = keras.random.SeedGenerator(self.seed) if self.use_stochastic_rounding else None

    def _draws(self, x, training):
        """Uniform [0, 1) draws of x's shape when rounding stochastically, else None."""
        if not (self.use_stochastic_rounding and training):
            return None
        replica = _replica()
        if replica is not None:
            return replica(ops.shape(x), x.dtype, self._seed_generator.next())
        return keras.random.uniform(ops.shape(x), dtype=x.dtype, seed=self._seed_generator)

    def __deepcopy__(self, memo):
        return type(self).from_config(self.get_config())


# ------------------------------------------------------------------- larq quantizers


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
        return ops.abs(x) if nd <= 1 else ops.mean(ops.abs(x), axis=tuple(range(nd - 1)))

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


# ----------------------------------------------------------------- QKeras quantizers


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
        scale = ops.max(ops.abs(x), axis=(0,) if axes is None else axes, keepdims=True) * 2.0 / levels

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


# ------------------------------------------------------------------- XNOR-Net, partial


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
        e = ops.mean(ops.abs(x), axis=_reduce_axes(nd, keep), keepdims=keep is not None and keep != nd - 1)
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


# ----------------------------------------------------------------------------- lookup


def get(identifier) -> Quantizer | None:
    """A quantizer from None, an instance, an alias string (optionally with call arguments,
    e.g. ``"quantized_bits(8, 0, keep_negative=False)"``) or a Keras config dict."""
    if identifier is None or isinstance(identifier, Quantizer):
        return identifier
    if isinstance(identifier, str):
        name, args, kwargs = _parse_call(identifier)
        if name not in _ALIASES:
            raise ValueError(_unknown_quantizer(identifier, name))
        try:
            return _ALIASES[name](*args, **kwargs)
        except TypeError as err:
            raise ValueError(f"quantizer {identifier!r}: {err}") from None
    if isinstance(identifier, dict):
        if "class_name" in identifier:
            obj = keras.saving.deserialize_keras_object(identifier)
            if not isinstance(obj, Quantizer):
                raise ValueError(f"{identifier['class_name']!r} is not an edgebnn quantizer")
            return obj
        if "class" in identifier:
            config = dict(identifier)
            name = config.pop("class")
            if name not in _ALIASES:
                raise ValueError(_unknown_quantizer(name, name))
            try:
                return _ALIASES[name](**config)
            except TypeError as err:
                raise ValueError(f"quantizer {name!r}: {err}") from None
    raise ValueError(f"cannot interpret {identifier!r} as a quantizer; pass an alias such as 'ste_sign'")


def _unknown_quantizer(given, name) -> str:
    return f"unknown quantizer {given!r}{did_you_mean(name, _ALIASES)}; known: {', '.join(sorted(_ALIASES))}"


def check(text: str) -> None:
    """Refuse a quantizer string whose name or arguments :func:`get` would refuse, without
    building it (no Keras variable, so no TensorFlow work: configurations are checked at load,
    before a distribution strategy exists). A value out of range is refused when it is built."""
    name, args, kwargs = _parse_call(text)
    if name not in _ALIASES:
        raise ValueError(_unknown_quantizer(text, name))
    try:
        inspect.signature(_ALIASES[name]).bind(*args, **kwargs)
    except TypeError as err:
        raise ValueError(f"quantizer {text!r}: {err}") from None


def serialize(q: Quantizer | None):
    return None if q is None else keras.saving.serialize_keras_object(q)


def _argument(node):
    """A literal argument, or a nested quantizer written as its alias (``ste_sign``,
    ``xnor_sign(axis=2)``), without evaluating any code."""
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Name) and func.id in _ALIASES:
        return get(ast.unparse(node))
    return ast.literal_eval(node)


def _parse_call(text: str):
    """``name`` or ``name(argument, ..., key=argument)`` without evaluating any code: each
    argument a literal or a nested quantizer (:func:`_argument`)."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise ValueError(f"cannot parse quantizer {text!r}; write e.g. 'quantized_bits(8, 0)'") from None
    if isinstance(tree, ast.Name):
        return tree.id, (), {}
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name):
        try:
            args = tuple(_argument(a) for a in tree.args)
            kwargs = {k.arg: _argument(k.value) for k in tree.keywords}
        except ValueError:
            raise ValueError(f"quantizer {text!r}: arguments must be literals or quantizers such as ste_sign(1.0)") from None
        return tree.func.id, args, kwargs
    raise ValueError(f"cannot parse quantizer {text!r}; write e.g. 'quantized_bits(8, 0)'")
