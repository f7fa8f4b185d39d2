"""Fixed-point types with the exact meaning of Xilinx ``ap_fixed``.

This is the one place in edgebnn that knows fixed-point arithmetic. Quantizers, freeze, the
emulator, the exporter and the estimator all use :class:`FixedType`.

A type holds ``width`` bits, ``integer`` of them left of the binary point (the sign bit
included when signed), so its grid step is ``lsb = 2**(integer - width)`` and a value is an
integer *code* times ``lsb``. ``quantize`` first rounds onto the grid (rounding mode), then
brings out-of-range codes back into range (overflow mode), in that order, as ap_fixed does.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

ROUNDING_MODES = ("TRN", "TRN_ZERO", "RND", "RND_ZERO", "RND_INF", "RND_MIN_INF", "RND_CONV")
OVERFLOW_MODES = ("WRAP", "SAT", "SAT_ZERO", "SAT_SYM")

_TYPE_RE = re.compile(
    r"^\s*(?:ap_)?(?P<u>u?)(?P<kind>fixed|int)\s*<\s*(?P<args>[^<>]*)>\s*$", re.IGNORECASE
)


@dataclasses.dataclass(frozen=True)
class FixedType:
    """An ap_fixed / ap_ufixed / ap_int / ap_uint type.

    Args:
        width: total bits W >= 1.
        integer: bits left of the binary point I (sign included); may be negative or > W.
        signed: two's complement when True.
        rounding: one of ``ROUNDING_MODES`` (ap_fixed's quantization mode).
        overflow: one of ``OVERFLOW_MODES`` (ap_fixed's overflow mode).
        sat_bits: ap_fixed's N, the saturation bits of WRAP mode.
    """

    width: int
    integer: int
    signed: bool = True
    rounding: str = "TRN"
    overflow: str = "WRAP"
    sat_bits: int = 0

    def __post_init__(self):
        if not isinstance(self.width, (int, np.integer)) or isinstance(self.width, bool) or self.width < 1:
            raise ValueError(f"fixed-point width must be an integer >= 1, got {self.width!r}")
        if not isinstance(self.integer, (int, np.integer)) or isinstance(self.integer, bool):
            raise ValueError(f"fixed-point integer bits must be an integer, got {self.integer!r}")
        if self.rounding not in ROUNDING_MODES:
            raise ValueError(f"unknown rounding mode {self.rounding!r}; use one of {', '.join(ROUNDING_MODES)}")
        if self.overflow not in OVERFLOW_MODES:
            raise ValueError(f"unknown overflow mode {self.overflow!r}; use one of {', '.join(OVERFLOW_MODES)}")
        if not isinstance(self.sat_bits, (int, np.integer)) or not 0 <= self.sat_bits <= self.width:
            raise ValueError(f"saturation bits must be an integer in [0, width], got {self.sat_bits!r}")
        object.__setattr__(self, "width", int(self.width))
        object.__setattr__(self, "integer", int(self.integer))
        object.__setattr__(self, "signed", bool(self.signed))
        object.__setattr__(self, "sat_bits", int(self.sat_bits))

    # ------------------------------------------------------------------ strings
    @classmethod
    def from_string(cls, text: str) -> "FixedType":
        """Parse hls4ml's ``fixed<8,3,RND_CONV,SAT>``, ``ufixed<6,0>``, ``int<4>``, ``uint<3>``
        or the C++ spellings ``ap_fixed<8,3,AP_RND_CONV,AP_SAT>``, ``ap_int<4>``."""
        if not isinstance(text, str):
            raise ValueError(f"fixed-point type must be a string like 'fixed<8,3>', got {text!r}")
        m = _TYPE_RE.match(text)
        if not m:
            raise ValueError(f"cannot parse fixed-point type {text!r}; write it like 'fixed<8,3,RND_CONV,SAT>'")
        signed = not m.group("u")
        args = [a.strip() for a in m.group("args").split(",")]
        try:
            if m.group("kind").lower() == "int":
                if len(args) != 1:
                    raise ValueError
                width = int(args[0])
                return cls(width, width, signed)
            if not 2 <= len(args) <= 5:
                raise ValueError
            width, integer = int(args[0]), int(args[1])
            modes = [a.upper().removeprefix("AP_") for a in args[2:]]
            rounding = modes[0] if len(modes) > 0 else "TRN"
            overflow = modes[1] if len(modes) > 1 else "WRAP"
            sat_bits = int(modes[2]) if len(modes) > 2 else 0
            return cls(width, integer, signed, rounding, overflow, sat_bits)
        except ValueError as err:
            detail = f": {err}" if str(err) else ""
            raise ValueError(f"invalid fixed-point type {text!r}{detail}") from None

    def __str__(self) -> str:
        u = "" if self.signed else "u"
        default_modes = self.rounding == "TRN" and self.overflow == "WRAP" and self.sat_bits == 0
        if self.integer == self.width and default_modes:
            return f"{u}int<{self.width}>"
        args = [str(self.width), str(self.integer)]
        if self.sat_bits:
            args += [self.rounding, self.overflow, str(self.sat_bits)]
        elif self.overflow != "WRAP":
            args += [self.rounding, self.overflow]
        elif self.rounding != "TRN":
            args += [self.rounding]
        return f"{u}fixed<{','.join(args)}>"

    def cpp(self) -> str:
        """The C++ spelling, e.g. ``ap_fixed<8,3,AP_RND_CONV,AP_SAT,0>``."""
        u = "u" if not self.signed else ""
        return (
            f"ap_{u}fixed<{self.width},{self.integer},AP_{self.rounding},AP_{self.overflow},{self.sat_bits}>"
        )

    # --------------------------------------------------------------- properties
    @property
    def fractional(self) -> int:
        return self.width - self.integer

    @property
    def lsb(self) -> float:
        return math.ldexp(1.0, self.integer - self.width)

    @property
    def min_code(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max_code(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    @property
    def min(self) -> float:
        return math.ldexp(float(self.min_code), self.integer - self.width)

    @property
    def max(self) -> float:
        return math.ldexp(float(self.max_code), self.integer - self.width)

    def replace(self, **changes) -> "FixedType":
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------- quantization
    def quantize(self, x, allow_nonfinite: bool = False) -> np.ndarray:
        """Values of ``x`` (float64) as this type holds them, as float64 on its grid."""
        return self.from_codes(self.codes(x, allow_nonfinite=allow_nonfinite))

    def codes(self, x, allow_nonfinite: bool = False) -> np.ndarray:
        """Integer codes (int64) of ``x`` after rounding and overflow handling."""
        x = np.asarray(x, dtype=np.float64)
        if not allow_nonfinite and not np.all(np.isfinite(x)):
            raise ValueError(f"cannot quantize NaN or infinity to {self}; clean the input first")
        scaled = np.ldexp(x, self.width - self.integer)  # exact: a power-of-two scale
        codes = _round(scaled, self.rounding)
        return self.overflow_codes(codes)

    def cast_codes(self, codes, src_lsb_exp: int) -> np.ndarray:
        """Integer codes on the grid ``2**src_lsb_exp`` (for example another type's
        ``lsb_exp``) converted to this type, as an ap_fixed assignment does."""
        codes = np.asarray(codes, dtype=np.int64)
        shift = self.lsb_exp - src_lsb_exp
        if shift <= 0:
            out = codes << (-shift)
        else:
            out = _round_shift(codes, shift, self.rounding)
        return self.overflow_codes(out)

    def overflow_codes(self, codes) -> np.ndarray:
        """Apply the overflow mode to integer codes that may lie outside the range."""
        codes = np.asarray(codes)
        lo, hi = self.min_code, self.max_code
        if self.overflow == "WRAP":
            if self.sat_bits:
                raise NotImplementedError("WRAP with saturation bits is not supported yet")
            mod = 1 << self.width
            out = np.mod(codes - lo, mod) + lo
        elif self.overflow == "SAT":
            out = np.clip(codes, lo, hi)
        elif self.overflow == "SAT_ZERO":
            out = np.where((codes < lo) | (codes > hi), 0, codes)
        else:  # SAT_SYM
            sym_lo = -hi if self.signed else lo
            out = np.clip(codes, sym_lo, hi)
        return np.asarray(out, dtype=np.int64)

    def from_codes(self, codes) -> np.ndarray:
        return np.ldexp(np.asarray(codes, dtype=np.float64), self.integer - self.width)

    def contains(self, x) -> bool:
        """True when every value of ``x`` lies exactly on this type's grid and in range."""
        x = np.asarray(x, dtype=np.float64)
        scaled = np.ldexp(x, self.width - self.integer)
        return bool(
            np.all(np.isfinite(x))
            and np.all(scaled == np.round(scaled))
            and np.all(scaled >= self.min_code)
            and np.all(scaled <= self.max_code)
        )

    # ------------------------------------------------------------- type rules
    @classmethod
    def for_range(cls, lo: float, hi: float, lsb_exp: int) -> "FixedType":
        """The narrowest type with grid ``2**lsb_exp`` that holds every value in [lo, hi].

        ``lo`` and ``hi`` must lie on that grid (interval analysis of exact arithmetic).
        """
        kmin = int(round(math.ldexp(lo, -lsb_exp)))
        kmax = int(round(math.ldexp(hi, -lsb_exp)))
        if math.ldexp(float(kmin), lsb_exp) != lo or math.ldexp(float(kmax), lsb_exp) != hi:
            raise ValueError(f"range [{lo}, {hi}] is not on the grid 2**{lsb_exp}")
        signed = kmin < 0
        if signed:
            width = max(_bits_signed(kmin), _bits_signed(kmax))
        else:
            width = max(1, int(kmax).bit_length())
        return cls(width, width + lsb_exp, signed)

    @property
    def lsb_exp(self) -> int:
        return self.integer - self.width


def _bits_signed(k: int) -> int:
    """Bits of the smallest two's complement type holding integer k."""
    return (k.bit_length() if k >= 0 else (-k - 1).bit_length()) + 1


def _round(s: np.ndarray, mode: str) -> np.ndarray:
    """Round float64 ``s`` to integers (int64 semantics kept in float64) by an ap_fixed mode."""
    fl = np.floor(s)
    frac = s - fl  # exact for float64
    if mode == "TRN":
        r = fl
    elif mode == "TRN_ZERO":
        r = np.trunc(s)
    else:
        up = frac > 0.5
        tie = frac == 0.5
        if mode == "RND":
            up = up | tie
        elif mode == "RND_ZERO":
            up = up | (tie & (s < 0))
        elif mode == "RND_INF":
            up = up | (tie & (s > 0))
        elif mode == "RND_MIN_INF":
            pass
        else:  # RND_CONV
            up = up | (tie & (np.mod(fl, 2) == 1))
        r = fl + up
    # clamp far outside int64 before the cast; overflow modes then act on the clamped code
    r = np.clip(r, -(2.0**62), 2.0**62)
    return r.astype(np.int64)


def _round_shift(codes: np.ndarray, shift: int, mode: str) -> np.ndarray:
    """Integer codes divided by 2**shift, rounded by an ap_fixed mode (exact, integer only)."""
    fl = codes >> shift
    rem = codes - (fl << shift)  # in [0, 2**shift)
    half = 1 << (shift - 1)
    if mode == "TRN":
        return fl
    if mode == "TRN_ZERO":
        return fl + ((codes < 0) & (rem != 0))
    up = rem > half
    tie = rem == half
    if mode == "RND":
        up = up | tie
    elif mode == "RND_ZERO":
        up = up | (tie & (codes < 0))
    elif mode == "RND_INF":
        up = up | (tie & (codes > 0))
    elif mode == "RND_MIN_INF":
        pass
    else:
        up = up | (tie & ((fl & 1) == 1))
    return fl + up


def dot_interval(lo, hi, weight):
    """Exact bounds of ``x @ weight`` for every ``x`` with ``lo <= x <= hi`` elementwise.

    ``lo``/``hi`` have shape (n_in,), ``weight`` (n_in, n_out); all values lie on fixed-point
    grids, so the float64 sums are exact while they stay below 2**53.
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    pos, neg = np.maximum(w, 0.0), np.minimum(w, 0.0)
    return lo @ pos + hi @ neg, hi @ pos + lo @ neg
