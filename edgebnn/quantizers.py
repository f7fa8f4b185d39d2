"""Straight-through-estimator quantizers for Keras 3.

Each quantizer is a small serializable object: called on a tensor it returns the quantized
tensor (forward exactly as the hardware computes it) with the gradient of its estimator, and
``hardware()`` names the grid its outputs lie on, which freeze exports.

String aliases work wherever a quantizer is accepted: ``"ste_sign"``, ``"quantized_bits"``, or
QKeras-style calls such as ``"quantized_bits(8, 0, keep_negative=False)"``.
"""

from __future__ import annotations

import ast
import dataclasses

import keras
from keras import ops

from .fixed import OVERFLOW_MODES, ROUNDING_MODES, FixedType

_ALIASES: dict[str, type] = {}


def _register(alias: str):
    def deco(cls):
        cls = keras.saving.register_keras_serializable(package="edgebnn")(cls)
        _ALIASES[alias] = cls
        cls.alias = alias
        return cls

    return deco


@dataclasses.dataclass(frozen=True)
class Hardware:
    """The grid a quantizer's outputs lie on.

    ``kind`` is ``"binary"`` (values -1, +1) or ``"fixed"``; ``type`` is the fixed-point type
    that holds the values exactly (``int<2>`` for binary).
    """

    kind: str
    type: FixedType


class Quantizer:
    """Base class: ``__call__(x, training=None)`` plus Keras serialization."""

    alias = ""

    def __call__(self, x, training=None):
        raise NotImplementedError

    def hardware(self) -> Hardware:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and self.get_config() == other.get_config()

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(self.get_config().items()))))


# --------------------------------------------------------------------------- rounding


def fixed_quantize(x, t: FixedType):
    """Keras-ops twin of :meth:`FixedType.quantize`: the same rounding and overflow modes.

    Exact in float32 while codes need at most 24 bits (tests prove agreement mode by mode).
    """
    x = ops.convert_to_tensor(x)
    scale = 2.0 ** (t.width - t.integer)
    s = x * scale  # a power-of-two scale is exact
    fl = ops.floor(s)
    frac = s - fl  # exact
    mode = t.rounding
    if mode == "TRN":
        r = fl
    elif mode == "TRN_ZERO":
        r = ops.where(s < 0, ops.ceil(s), fl)
    else:
        up = frac > 0.5
        tie = frac == 0.5
        if mode == "RND":
            up = up | tie
        elif mode == "RND_ZERO":
            up = up | (tie & (s < 0))
        elif mode == "RND_INF":
            up = up | (tie & (s > 0))
        elif mode == "RND_CONV":
            odd = ops.not_equal(fl - 2.0 * ops.floor(fl * 0.5), 0.0)
            up = up | (tie & odd)
        r = fl + ops.cast(up, x.dtype)
    lo, hi = float(t.min_code), float(t.max_code)
    if t.overflow == "SAT":
        r = ops.clip(r, lo, hi)
    elif t.overflow == "SAT_SYM":
        r = ops.clip(r, -hi if t.signed and t.width > 1 else lo, hi)  # ap_fixed: 1-bit keeps -1
    elif t.overflow == "SAT_ZERO":
        r = ops.where((r < lo) | (r > hi), ops.zeros_like(r), r)
    else:  # WRAP
        if t.sat_bits:
            raise ValueError(f"{t}: WRAP with saturation bits is not supported in training; use SAT")
        span = 2.0**t.width
        r = r - span * ops.floor((r - lo) / span)
    return r / scale


def _tensor(x):
    """A plain tensor: custom gradients must not capture a variable read inside them."""
    if isinstance(x, keras.Variable):
        return ops.copy(x.value)
    return ops.convert_to_tensor(x)


def _ste_identity(q_fn):
    """Forward ``q_fn(x)``, gradient 1 everywhere."""

    @ops.custom_gradient
    def f(x):
        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return upstream

        return q_fn(x), grad

    return f


# ------------------------------------------------------------------------- quantizers


@_register("ste_sign")
class SteSign(Quantizer):
    r"""Sign with a straight-through estimator (larq ``ste_sign``).

    Forward: :math:`q(x) = -1` if :math:`x < 0` else :math:`+1` (so ``sign(0) = +1``).
    Gradient: :math:`\partial q / \partial x = 1` where :math:`|x| \le` ``clip_value``
    (inclusive), else 0.
    """

    def __init__(self, clip_value: float = 1.0):
        self.clip_value = float(clip_value)

    def __call__(self, x, training=None):
        clip = self.clip_value

        @ops.custom_gradient
        def f(x):
            def grad(*args, upstream=None):
                if upstream is None:
                    (upstream,) = args
                return upstream * ops.cast(ops.abs(x) <= clip, upstream.dtype)

            return ops.where(x < 0, -ops.ones_like(x), ops.ones_like(x)), grad

        return f(_tensor(x))

    def hardware(self) -> Hardware:
        return Hardware("binary", FixedType(2, 2))

    def get_config(self):
        return {"clip_value": self.clip_value}


@_register("quantized_bits")
class QuantizedBits(Quantizer):
    r"""QKeras ``quantized_bits``: a fixed-point grid with a round-through estimator.

    Forward: :math:`q(x) = \mathrm{clip}(\mathrm{round}(x / s), c_{min}, c_{max}) \cdot s` with
    step :math:`s = 2^{integer - bits + keep\_negative}`, codes
    :math:`c \in [-2^{b'} + symmetric, 2^{b'} - 1]` (:math:`b' = bits - keep\_negative`;
    :math:`c_{min} = 0` when ``keep_negative`` is False), rounding half to even.
    Gradient: 1 everywhere.

    It is ``ap_fixed<bits, integer + keep_negative>`` with ``rounding``/``overflow`` modes
    (defaults ``RND_CONV`` and ``SAT``, ``SAT_SYM`` when symmetric); both may be set
    explicitly to any ap_fixed mode. ``alpha`` must be None for now.
    """

    def __init__(self, bits: int = 8, integer: int = 0, symmetric: bool = False, keep_negative: bool = True,
                 alpha=None, rounding: str = "RND_CONV", overflow: str | None = None):
        if alpha is not None:
            raise ValueError(
                f"quantized_bits(alpha={alpha!r}) is not supported yet; use alpha=None (a plain fixed-point grid)"
            )
        if rounding not in ROUNDING_MODES:
            raise ValueError(f"quantized_bits rounding {rounding!r} is unknown; use one of {', '.join(ROUNDING_MODES)}")
        if overflow is not None and overflow not in OVERFLOW_MODES:
            raise ValueError(f"quantized_bits overflow {overflow!r} is unknown; use one of {', '.join(OVERFLOW_MODES)}")
        if int(bits) < 1 or int(bits) - bool(keep_negative) < 0:
            raise ValueError(f"quantized_bits(bits={bits}) needs at least 1 bit (2 when keep_negative)")
        self.bits = int(bits)
        self.integer = int(integer)
        self.symmetric = bool(symmetric)
        self.keep_negative = bool(keep_negative)
        self.alpha = alpha
        self.rounding = rounding
        self.overflow = overflow

    @property
    def type(self) -> FixedType:
        overflow = self.overflow or ("SAT_SYM" if self.symmetric and self.keep_negative else "SAT")
        return FixedType(self.bits, self.integer + self.keep_negative, self.keep_negative, self.rounding, overflow)

    def __call__(self, x, training=None):
        t = self.type
        return _ste_identity(lambda v: fixed_quantize(v, t))(_tensor(x))

    def hardware(self) -> Hardware:
        return Hardware("fixed", self.type)

    def get_config(self):
        return {
            "bits": self.bits,
            "integer": self.integer,
            "symmetric": self.symmetric,
            "keep_negative": self.keep_negative,
            "alpha": self.alpha,
            "rounding": self.rounding,
            "overflow": self.overflow,
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
            raise ValueError(f"unknown quantizer {identifier!r}; known: {', '.join(sorted(_ALIASES))}")
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
                raise ValueError(f"unknown quantizer {name!r}; known: {', '.join(sorted(_ALIASES))}")
            try:
                return _ALIASES[name](**config)
            except TypeError as err:
                raise ValueError(f"quantizer {name!r}: {err}") from None
    raise ValueError(f"cannot interpret {identifier!r} as a quantizer; pass an alias such as 'ste_sign'")


def serialize(q: Quantizer | None):
    return None if q is None else keras.saving.serialize_keras_object(q)


def _parse_call(text: str):
    """``name`` or ``name(literal, ..., key=literal)`` without evaluating any code."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise ValueError(f"cannot parse quantizer {text!r}; write e.g. 'quantized_bits(8, 0)'") from None
    if isinstance(tree, ast.Name):
        return tree.id, (), {}
    if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name):
        try:
            args = tuple(ast.literal_eval(a) for a in tree.args)
            kwargs = {k.arg: ast.literal_eval(k.value) for k in tree.keywords}
        except ValueError:
            raise ValueError(f"quantizer {text!r}: arguments must be literals") from None
        return tree.func.id, args, kwargs
    raise ValueError(f"cannot parse quantizer {text!r}; write e.g. 'quantized_bits(8, 0)'")
