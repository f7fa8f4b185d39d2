"""The base of every quantizer: :class:`Quantizer`, exact rounding and overflow on fixed-point
grids (:func:`fixed_quantize`), the straight-through estimators and stochastic rounding the
families share, and the quantizers by name (the aliases each family registers; :func:`get` of
an alias, a QKeras-style call such as ``"quantized_bits(8, 0, keep_negative=False)"``, a config
or an instance; :func:`check`, :func:`serialize`).
"""

from __future__ import annotations

import ast
import inspect
import json

import keras
import numpy as np
from keras import ops

from ... import forms
from ...errors import EdgebnnError, did_you_mean
from ...fixed import ROUNDING_MODES, FixedType

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


def _mean_once(v, axis, keepdims: bool = False):
    """The mean of ``v`` over ``axis`` as its exact quotient rounded once to ``v``'s type: summed
    and divided in float64. Eager TensorFlow and XLA then give the same number (in float32 XLA
    sums in its own order and multiplies by 1/N where TensorFlow divides by N, an ulp apart for
    an N not a power of two, so a scale and the model's outputs would depend on jit_compile):
    float32 values of one tensor sum exactly in float64, and the quotient's one float64 rounding
    (or two, by 1/N) never crosses a float32 rounding boundary for N below 2**20."""
    return ops.cast(ops.mean(ops.cast(v, "float64"), axis=axis, keepdims=keepdims), v.dtype)


def _qkeras_scale(alpha: str, x, q, axes):
    r"""QKeras ``_get_scale``: :math:`s = \overline{xq} / (\overline{qq} + \epsilon)` over ``axes``
    (elementwise, no mean, when ``axes`` is None: QKeras' 1-D case); ``"auto_po2"`` rounds it
    to :math:`2^{\mathrm{round}(\log_2(s + \epsilon))}` (half to even)."""
    if axes is None:
        qx, qq = x * q, q * q
    else:
        qx = _mean_once(x * q, axis=axes, keepdims=True)
        qq = _mean_once(q * q, axis=axes, keepdims=True)
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
