"""Fixed-point types with the exact meaning of Xilinx ``ap_fixed``.

This is the one place in edgebnn that knows fixed-point arithmetic. Quantizers, freeze, the
emulator, the exporter and the estimator all use :class:`FixedType`.

A type holds ``width`` bits, ``integer`` of them left of the binary point (the sign bit
included when signed), so its grid step is ``lsb = 2**(integer - width)`` and a value is an
integer *code* times ``lsb``. A conversion (from a double, or from another fixed-point type)
first rounds the exact source value onto the grid (rounding mode), then brings an out-of-range
code back into range (overflow mode), in that order, as ap_fixed does. The result depends only
on the source *value*, so one rule serves ``ap_fixed(double)`` and ``ap_fixed = ap_fixed``.

Rounding of ``v = k + f`` (``k`` integer, ``0 <= f < 1``)::

    TRN          k                      (floor)
    TRN_ZERO     toward zero
    RND          nearest, ties up       (toward +inf)
    RND_ZERO     nearest, ties toward zero
    RND_INF      nearest, ties away from zero
    RND_MIN_INF  nearest, ties down     (toward -inf)
    RND_CONV     nearest, ties to even

Overflow of a rounded code ``r`` outside ``[min_code, max_code]``::

    WRAP         r modulo 2**width (two's complement)
    SAT          clamp to [min_code, max_code]
    SAT_ZERO     0
    SAT_SYM      clamp to [-max_code, max_code] (signed); exactly min_code also becomes -max_code
    WRAP, N>0    wrap, then force the top N bits: signed keeps the sign bit of the source and
                 sets the next N-1 bits to its complement; unsigned sets the top N bits to 1

Facts of the real headers (hls4ml's ``ap_types``), checked by tests/test_fixed_apfixed.py:

- SAT_SYM on a 1-bit signed type behaves as SAT (range {-1, 0}); on unsigned types as SAT.
- Unsigned WRAP with N saturation bits sets the top N bits to 1 on underflow too (a negative
  source gives a large positive code).
- ``-0.0`` converts to 0; doubles beyond the range wrap modulo ``2**width`` exactly (WRAP) or
  saturate, at any magnitude. An infinity reads as ``±2**1024`` and a NaN as ``±(1.m)*2**1024``
  (ap_fixed does not reject them); subnormal doubles are read as ``(1.m)*2**-1023``, which
  matters only for types with more than ~1000 fractional bits. edgebnn rejects NaN and
  infinity unless ``allow_nonfinite=True``, and then reproduces ap_fixed.
- A cast that drops more bits than its source holds, under any rounding but TRN, reads a bit
  beyond the source's MSB: ``ap_private`` asserts, and hls4ml's C-simulation (built without
  NDEBUG) aborts. :func:`cast_asserts` tells when; the value computed here is the headers' own
  (with NDEBUG the bit is discarded).
- ``int<W>``/``uint<W>`` parse to ``fixed<W,W>``/``ufixed<W,W>``: identical storage, but C++
  ``ap_int`` converts fractional values differently (truncation toward zero, and
  ``ap_int<W>(-0.3) == 1``), so give hls4ml only integer-valued data in such a type.

Codes are ``int64`` arrays, ``uint64`` for 64-bit unsigned types and Python-int ``object``
arrays beyond 64 bits. Values (``quantize``, ``from_codes``) are float64: exact whenever the
held value fits in a double (always up to 53 bits); wider values come back rounded to nearest
even, as ``ap_fixed::to_double`` does.
"""

from __future__ import annotations

import dataclasses
import math
import re
import struct

import numpy as np

ROUNDING_MODES = ("TRN", "TRN_ZERO", "RND", "RND_ZERO", "RND_INF", "RND_MIN_INF", "RND_CONV")
OVERFLOW_MODES = ("WRAP", "SAT", "SAT_ZERO", "SAT_SYM")

_TYPE_RE = re.compile(r"^\s*(?:ap_)?(?P<u>u?)(?P<kind>fixed|int)\s*<\s*(?P<args>[^<>]*)>\s*$", re.IGNORECASE)

# Widths up to this take the all-float64 path: every code, every intermediate (2 * code) is an
# integer below 2**52, so float64 arithmetic on them is exact.
_FAST_MAX_WIDTH = 50
# |fractional bits| up to this: 2**F and 2**(F+1) are normal doubles, scaling by them is exact
_FAST_MAX_SHIFT = 1000
# elements per chunk of the float path: its temporaries stay in cache (measured best 2**15..2**17)
_CHUNK = 1 << 16


def _normalize_mode(value, modes, what):
    value = getattr(value, "name", value)  # enums such as hls4ml's RoundingMode
    if isinstance(value, str):
        norm = value.strip().upper()
        norm = norm[3:] if norm.startswith("AP_") else norm
        if norm in modes:
            return norm
    raise ValueError(f"unknown {what} mode {value!r}; use one of {', '.join(modes)}")


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


@dataclasses.dataclass(frozen=True)
class FixedType:
    """An ap_fixed / ap_ufixed type (``int<W>`` is ``fixed<W,W>``).

    Args:
        width: total bits W >= 1.
        integer: bits left of the binary point I (sign included); may be negative or > W.
        signed: two's complement when True.
        rounding: one of ``ROUNDING_MODES`` (ap_fixed's quantization mode).
        overflow: one of ``OVERFLOW_MODES`` (ap_fixed's overflow mode).
        sat_bits: ap_fixed's N, the saturation bits of WRAP mode, 0 <= N <= W.
    """

    width: int
    integer: int
    signed: bool = True
    rounding: str = "TRN"
    overflow: str = "WRAP"
    sat_bits: int = 0

    def __post_init__(self):
        if not _is_int(self.width) or self.width < 1:
            raise ValueError(f"fixed-point width must be an integer >= 1, got {self.width!r}")
        if not _is_int(self.integer):
            raise ValueError(f"fixed-point integer bits must be an integer, got {self.integer!r}")
        if not (isinstance(self.signed, (bool, np.bool_)) or (_is_int(self.signed) and self.signed in (0, 1))):
            raise ValueError(f"fixed-point signed must be True or False, got {self.signed!r}")
        rounding = _normalize_mode(self.rounding, ROUNDING_MODES, "rounding")
        overflow = _normalize_mode(self.overflow, OVERFLOW_MODES, "overflow")
        if not _is_int(self.sat_bits) or not 0 <= self.sat_bits <= self.width:
            raise ValueError(f"saturation bits must be an integer in [0, width={self.width}], got {self.sat_bits!r}")
        object.__setattr__(self, "width", int(self.width))
        object.__setattr__(self, "integer", int(self.integer))
        object.__setattr__(self, "signed", bool(self.signed))
        object.__setattr__(self, "rounding", rounding)
        object.__setattr__(self, "overflow", overflow)
        object.__setattr__(self, "sat_bits", int(self.sat_bits))

    # ------------------------------------------------------------------ strings
    @classmethod
    def from_string(cls, text: str) -> FixedType:
        """Parse hls4ml's ``fixed<8,3,RND_CONV,SAT>``, ``ufixed<6,0>``, ``fixed<8,3,RND,WRAP,2>``,
        ``int<4>``, ``uint<3>`` or the C++ spellings ``ap_fixed<8,3,AP_RND_CONV,AP_SAT>``,
        ``ap_int<4>``."""
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
                    raise ValueError("an int type takes exactly one argument, its width")
                width = int(args[0])
                return cls(width, width, signed)
            if not 2 <= len(args) <= 5:
                raise ValueError("a fixed type takes 2 to 5 arguments: width, integer[, rounding[, overflow[, N]]]")
            width, integer = int(args[0]), int(args[1])
            rounding = args[2] if len(args) > 2 else "TRN"
            overflow = args[3] if len(args) > 3 else "WRAP"
            sat_bits = int(args[4]) if len(args) > 4 else 0
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
        return f"ap_{u}fixed<{self.width},{self.integer},AP_{self.rounding},AP_{self.overflow},{self.sat_bits}>"

    # --------------------------------------------------------------- properties
    @property
    def fractional(self) -> int:
        return self.width - self.integer

    @property
    def lsb_exp(self) -> int:
        return self.integer - self.width

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
        """Largest value (rounded to the nearest double beyond 53 bits)."""
        return math.ldexp(float(self.max_code), self.integer - self.width)

    @property
    def code_dtype(self) -> np.dtype:
        """dtype of ``codes()``: int64, uint64 for 64-bit unsigned types, object beyond."""
        if self.width <= 63 or (self.width == 64 and self.signed):
            return np.dtype(np.int64)
        if self.width == 64:
            return np.dtype(np.uint64)
        return np.dtype(object)

    def replace(self, **changes) -> FixedType:
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------- quantization
    def quantize(self, x, allow_nonfinite: bool = False) -> np.ndarray:
        """Values of ``x`` (float64) as this type holds them after ``ap_fixed(double)``, as
        float64 on its grid (``+0.0`` for zero).

        NaN or infinity raise ValueError unless ``allow_nonfinite``, which reproduces ap_fixed.
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 0:  # ufuncs return scalars for 0-d arrays; work on one element
            return self.quantize(x.reshape(1), allow_nonfinite).reshape(())
        out = self._fast(x, allow_nonfinite, values=True)
        if out is None:
            out = self.from_codes(self.codes(x, allow_nonfinite=allow_nonfinite))
            np.add(out, 0.0, out=out)  # -0.0 -> +0.0: ap_fixed has no negative zero
        return out

    def codes(self, x, allow_nonfinite: bool = False, dtype=None) -> np.ndarray:
        """Integer codes of ``x`` (float64) after rounding and overflow, as ``ap_fixed(double)``
        stores them; dtype ``self.code_dtype``, or ``dtype`` (a signed integer dtype that holds
        every code of this type, such as int8 for a type of up to 8 bits: written directly)."""
        if dtype is not None:
            dtype = np.dtype(dtype)
            info = np.iinfo(dtype) if dtype.kind == "i" else None
            if info is None or not (info.min <= self.min_code and self.max_code <= info.max):
                raise ValueError(f"dtype {dtype} does not hold every code of {self}")
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 0:
            return self.codes(x.reshape(1), allow_nonfinite, dtype).reshape(())
        out = self._fast(x, allow_nonfinite, values=False, dtype=dtype)
        if out is not None:
            return out
        if dtype is not None:
            return self.codes(x, allow_nonfinite).astype(dtype)
        finite = np.isfinite(x)
        all_finite = bool(finite.all())
        if not all_finite and not allow_nonfinite:
            raise ValueError(self._nonfinite_message())
        if self.width > 64:
            return _object_map(self.code_of, x)
        # ap_fixed reads subnormal doubles as (1.m) * 2**-1023: visible from 1022 fraction bits
        odd = ~finite
        if self.fractional >= 1022:
            odd |= (x != 0) & (np.abs(x) < 2.0**-1022)
        if not odd.any():
            return self._wide_codes(x)
        out = self._wide_codes(np.where(odd, 0.0, x))
        out[odd] = [self.code_of(float(v)) for v in x[odd]]
        return out

    def cast_codes(self, codes, src_lsb_exp: int) -> np.ndarray:
        """Integer codes on the grid ``2**src_lsb_exp`` (for example another type's
        ``lsb_exp``) converted to this type, exactly as an ap_fixed assignment does.

        ``codes`` may be any integer array (int64, uint64, or Python ints in an object array)."""
        codes = np.asarray(codes)
        if codes.dtype.kind not in "iuO":
            raise ValueError(f"cast_codes needs integer codes, got dtype {codes.dtype}")
        if codes.ndim == 0:
            return self.cast_codes(codes.reshape(1), src_lsb_exp).reshape(())
        src_lsb_exp = int(src_lsb_exp)
        shift = self.lsb_exp - src_lsb_exp
        if self.width > 64 or codes.dtype == object:
            return self._object_cast(codes, src_lsb_exp)
        if (codes.dtype.kind == "u" and codes.dtype != np.uint64) or (codes.dtype.kind == "i" and codes.dtype != np.int64):
            codes = codes.astype(np.int64)
        if shift > 0:
            if shift > 62:
                return self._object_cast(codes, src_lsb_exp)
            return self.overflow_codes(_round_shift(codes, shift, self.rounding))
        if shift == 0:
            return self.overflow_codes(codes)
        return self._left_shift_cast(codes, -shift)

    def overflow_codes(self, codes) -> np.ndarray:
        """Apply the overflow mode to integer codes that may lie outside the range (the codes
        are already on this type's grid); dtype ``self.code_dtype``."""
        codes = np.asarray(codes)
        if codes.dtype.kind not in "iuO":
            raise ValueError(f"overflow_codes needs integer codes, got dtype {codes.dtype}")
        if codes.ndim == 0:
            return self.overflow_codes(codes.reshape(1)).reshape(())
        if self.width > 64 or codes.dtype == object:
            out = _object_map(lambda c: _overflow_int(int(c), self), codes)
            return out if self.width > 64 else out.astype(self.code_dtype)
        if codes.dtype.kind == "u":
            codes = codes.astype(np.uint64)
            over = codes > np.uint64(self.max_code)
            under = np.zeros(codes.shape, dtype=bool)
            low = codes
        else:
            codes = codes.astype(np.int64, copy=False)
            over = codes > self.max_code if self.max_code < 2**63 else np.zeros(codes.shape, dtype=bool)
            under = codes < self.min_code
            low = codes.astype(np.uint64)  # two's complement bits, modulo 2**64
        return self._finish(low, over, under)

    def from_codes(self, codes) -> np.ndarray:
        """float64 values of integer codes (nearest double beyond 53 bits)."""
        codes = np.asarray(codes)
        if codes.dtype == object:
            codes = np.array([float(c) for c in codes.ravel()], dtype=np.float64).reshape(codes.shape)
        return np.ldexp(codes.astype(np.float64), self.lsb_exp)

    def contains(self, x) -> bool:
        """True when every value of ``x`` lies exactly on this type's grid and in range."""
        x = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            return False
        scaled = np.ldexp(x, self.fractional)
        return bool(
            np.all(scaled == np.floor(scaled))
            and np.all(np.ldexp(scaled, self.lsb_exp) == x)  # no bits lost to underflow
            and np.all(scaled >= float(self.min_code))  # powers of two: exact comparisons
            and np.all(scaled < float(self.max_code + 1))
        )

    # --------------------------------------------------------- scalar (exact)
    def code_of(self, x: float) -> int:
        """Code of one double, as ``ap_fixed(double)`` stores it (Python int, any width,
        NaN and infinity read as ap_fixed reads them). The reference the arrays must match."""
        num, exp = _ap_double_parts(float(x))
        return self._round_overflow(num, exp)

    def cast_code(self, code: int, src_lsb_exp: int) -> int:
        """One integer code on the grid ``2**src_lsb_exp`` converted to this type (Python int)."""
        return self._round_overflow(int(code), int(src_lsb_exp))

    def _round_overflow(self, num: int, exp: int) -> int:
        k = exp - self.lsb_exp
        r = num << k if k >= 0 else _round_shift_int(num, -k, self.rounding)
        return _overflow_int(r, self)

    # ------------------------------------------------------------- type rules
    @classmethod
    def for_range(cls, lo: float, hi: float, lsb_exp: int) -> FixedType:
        """The narrowest type with grid ``2**lsb_exp`` that holds every value in [lo, hi].

        ``lo`` and ``hi`` must lie on that grid (interval analysis of exact arithmetic).
        """
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise ValueError(f"for_range needs finite lo <= hi, got [{lo}, {hi}]")
        kmin = int(math.ldexp(lo, -lsb_exp))
        kmax = int(math.ldexp(hi, -lsb_exp))
        if math.ldexp(float(kmin), lsb_exp) != lo or math.ldexp(float(kmax), lsb_exp) != hi:
            raise ValueError(f"range [{lo}, {hi}] is not on the grid 2**{lsb_exp}")
        return cls.for_codes(kmin, kmax, lsb_exp)

    @classmethod
    def for_codes(cls, kmin: int, kmax: int, lsb_exp: int) -> FixedType:
        """The narrowest type with grid ``2**lsb_exp`` holding every code in [kmin, kmax]
        (Python ints, exact at any size). Unsigned when ``kmin >= 0``."""
        kmin, kmax = int(kmin), int(kmax)
        if kmin > kmax:
            raise ValueError(f"for_codes needs kmin <= kmax, got [{kmin}, {kmax}]")
        if kmin < 0:
            width = max(_bits_signed(kmin), _bits_signed(kmax))
            return cls(width, width + lsb_exp, True)
        width = max(1, kmax.bit_length())
        return cls(width, width + lsb_exp, False)

    # ----------------------------------------------------------- array kernels
    def _nonfinite_message(self) -> str:
        return (
            f"cannot quantize NaN or infinity to {self}; clean the input first "
            "(or pass allow_nonfinite=True to get what ap_fixed makes of them)"
        )

    def _fast(self, x: np.ndarray, allow_nonfinite: bool, values: bool, dtype=None):
        """Codes (int64, or ``dtype``), or values (float64) when ``values``, of ``x`` computed in float64,
        chunk by chunk so that every temporary stays in cache; None when this type or these
        values need the wide path. Every step is exact (see ``_round_chunk``)."""
        f, w, mode = self.fractional, self.width, self.overflow
        if w > _FAST_MAX_WIDTH or not -_FAST_MAX_SHIFT <= f <= _FAST_MAX_SHIFT:
            return None
        lo, hi = self.min_code, self.max_code
        if mode == "SAT_SYM" and self.signed and w > 1:
            lo = -hi  # ap_fixed maps min_code itself to -max_code (not for 1-bit types)
        scale, lsb = math.ldexp(1.0, f), math.ldexp(1.0, -f)
        exact_lsb = -f > -1000 and self.integer < 1000  # r * lsb stays a normal double
        flat = x.reshape(-1)
        out = np.empty(flat.shape, dtype=np.float64 if values else dtype or np.int64)
        r = np.empty(min(flat.shape[0], _CHUNK))
        with np.errstate(over="ignore"):  # huge values may scale to inf before they saturate
            for start in range(0, flat.shape[0], _CHUNK):
                xc = flat[start : start + _CHUNK]
                rc = r[: xc.shape[0]]
                xmin, xmax = float(xc.min()), float(xc.max())  # NaN propagates: one check
                if not (math.isfinite(xmin) and math.isfinite(xmax)):
                    if allow_nonfinite:
                        return None
                    raise ValueError(self._nonfinite_message())
                smin, smax = xmin * scale, xmax * scale
                if smin >= lo and smax <= hi:  # rounding stays in range
                    _round_chunk(xc, f, self.rounding, rc, None)
                elif mode in ("SAT", "SAT_SYM"):
                    # rounding is monotone and keeps integers: saturating before it is the same
                    _round_chunk(xc, f, self.rounding, rc, (lo, hi))
                elif mode == "SAT_ZERO":
                    _round_chunk(xc, f, self.rounding, rc, (lo - 1, hi + 1))
                    bad = rc < lo
                    bad |= rc > hi
                    np.copyto(rc, 0.0, where=bad)
                elif max(-smin, smax) >= 2.0**51:
                    return None  # wrapping huge values: the wide path keeps every bit
                else:
                    _round_chunk(xc, f, self.rounding, rc, None)
                    _wrap_chunk(rc, self, lo, hi)
                oc = out[start : start + _CHUNK]
                if not values:
                    oc[...] = rc
                elif exact_lsb:
                    np.multiply(rc, lsb, out=oc)
                    np.add(oc, 0.0, out=oc)  # -0.0 -> +0.0: ap_fixed has no negative zero
                else:
                    oc[...] = np.ldexp(rc, -f) + 0.0
        return out.reshape(x.shape)

    def _wide_codes(self, x: np.ndarray) -> np.ndarray:
        """Codes of finite doubles for widths up to 64, any magnitude, exactly: round in float64
        (exact for every finite value), detect overflow by comparing with powers of two, carry
        the low 64 bits to integers."""
        f = self.fractional
        with np.errstate(over="ignore"):  # +-inf only for values far out of range
            s = x * math.ldexp(1.0, f) if -_FAST_MAX_SHIFT <= f <= _FAST_MAX_SHIFT else np.ldexp(x, f)
        r = _round_exact(s, self.rounding)
        if self.rounding == "TRN":
            # a negative value whose scaling underflowed to -0.0 still floors to -1
            np.putmask(r, (x < 0) & (r > -1.0), -1.0)
        top = math.ldexp(1.0, self.width - 1 if self.signed else self.width)
        over = r >= top
        under = r < (-top if self.signed else 0.0)
        with np.errstate(invalid="ignore"):
            m = np.fmod(r, 2.0**64)  # exact; +-inf (whose low 64 bits are 0) -> NaN
        np.putmask(m, ~np.isfinite(m), 0.0)
        hi32 = np.floor(m * 2.0**-32)
        lo32 = m - hi32 * 2.0**32  # in [0, 2**32)
        low = (hi32.astype(np.int64).astype(np.uint64) << np.uint64(32)) + lo32.astype(np.uint64)
        return self._finish(low, over, under)

    def _left_shift_cast(self, codes: np.ndarray, k: int) -> np.ndarray:
        """codes * 2**k converted to this type (no rounding), without intermediate overflow."""
        if codes.dtype == np.uint64:
            low = codes << np.uint64(k) if k < 64 else np.zeros(codes.shape, dtype=np.uint64)
            over = codes > np.uint64(self.max_code >> k)
            under = np.zeros(codes.shape, dtype=bool)
        else:
            low = codes.astype(np.uint64) << np.uint64(k) if k < 64 else np.zeros(codes.shape, dtype=np.uint64)
            over = codes > (self.max_code >> k) if (self.max_code >> k) < 2**63 else np.zeros(codes.shape, dtype=bool)
            bound = -((-self.min_code) >> k) if self.signed else 0  # codes below it underflow
            under = codes < bound
        return self._finish(low, over, under)

    def _finish(self, low: np.ndarray, over: np.ndarray, under: np.ndarray) -> np.ndarray:
        """Codes from the low 64 bits (a fresh uint64 array, two's complement) of the exact
        rounded code and its overflow flags, by the overflow mode. Widths up to 64."""
        w = self.width
        if w < 64:
            low = low & np.uint64((1 << w) - 1)
        if self.signed:
            out = low.view(np.int64) if w == 64 else (low << np.uint64(64 - w)).view(np.int64) >> (64 - w)
        else:
            out = low if w == 64 else low.view(np.int64)
        mode = self.overflow
        if mode == "WRAP":
            n = self.sat_bits
            if n:
                bad = over | under
                keep = (1 << (w - n)) - 1
                if self.signed:
                    kept = out & keep
                    np.copyto(out, kept + ((1 << (w - 1)) - (1 << (w - n))), where=over)
                    np.copyto(out, kept + self.min_code, where=under)
                else:
                    kept = out & out.dtype.type(keep)
                    np.copyto(out, kept + out.dtype.type((1 << w) - (1 << (w - n))), where=bad)
            return out
        lo, hi = self.min_code, self.max_code
        if mode == "SAT_ZERO":
            np.copyto(out, 0, where=over | under)
            return out
        if mode == "SAT_SYM" and self.signed and w > 1:
            under = under | ((out == lo) & ~over)
            lo = -hi
        np.copyto(out, out.dtype.type(hi), where=over)
        np.copyto(out, out.dtype.type(lo), where=under)
        return out

    def _object_cast(self, codes: np.ndarray, src_lsb_exp: int) -> np.ndarray:
        out = _object_map(lambda c: self.cast_code(int(c), src_lsb_exp), codes)
        return out if self.width > 64 else out.astype(self.code_dtype)


# ------------------------------------------------------------------- scalar helpers
def _bits_signed(k: int) -> int:
    """Bits of the smallest two's complement type holding integer k."""
    return (k.bit_length() if k >= 0 else (-k - 1).bit_length()) + 1


def _ap_double_parts(x: float) -> tuple[int, int]:
    """(num, exp) with ``num * 2**exp`` the value ap_fixed reads from a double: exact for
    normal numbers; subnormals read as (1.m) * 2**-1023, inf as 2**1024, NaN as (1.m)*2**1024."""
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    if bits & 0x7FFF_FFFF_FFFF_FFFF == 0:
        return 0, 0
    man = (1 << 52) | (bits & ((1 << 52) - 1))
    return (-man if bits >> 63 else man), ((bits >> 52) & 0x7FF) - 1075


def _round_shift_int(num: int, shift: int, mode: str) -> int:
    """Python int ``num / 2**shift`` rounded by an ap_fixed mode (shift >= 1)."""
    fl = num >> shift
    rem = num - (fl << shift)  # in [0, 2**shift)
    if mode == "TRN" or rem == 0:
        return fl
    if mode == "TRN_ZERO":
        return fl + (num < 0)
    half = 1 << (shift - 1)
    if rem != half:
        return fl + (rem > half)
    if mode == "RND":
        return fl + 1
    if mode == "RND_ZERO":
        return fl + (num < 0)
    if mode == "RND_INF":
        return fl + (num > 0)
    if mode == "RND_MIN_INF":
        return fl
    return fl + (fl & 1)  # RND_CONV


def _overflow_int(r: int, t: FixedType) -> int:
    """The overflow mode of ``t`` applied to one exact rounded code (Python int)."""
    lo, hi, w = t.min_code, t.max_code, t.width
    sym = t.overflow == "SAT_SYM" and t.signed and w > 1
    if lo <= r <= hi and not (sym and r == lo):
        return r
    if t.overflow in ("SAT", "SAT_SYM"):
        return hi if r > hi else (-hi if sym else lo)
    if t.overflow == "SAT_ZERO":
        return 0
    bits = r & ((1 << w) - 1)
    n = t.sat_bits
    if n:
        keep = bits & ((1 << (w - n)) - 1)
        if not t.signed:
            bits = keep | (((1 << n) - 1) << (w - n))
        elif r < 0:
            bits = keep | (1 << (w - 1))
        else:
            bits = keep | ((1 << (w - 1)) - (1 << (w - n)))
    return bits - (1 << w) if t.signed and bits >> (w - 1) else bits


def _object_map(fn, a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    out = np.empty(a.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(a.reshape(-1).tolist()):
        flat[i] = fn(v)
    return out


# -------------------------------------------------------------------- array rounding
def _round_chunk(x: np.ndarray, f: int, mode: str, r: np.ndarray, clip) -> np.ndarray:
    """``r[:] =`` the codes of ``x * 2**f`` rounded by an ap_fixed mode, the scaled value first
    clamped to the integers ``clip = (a, b)`` when given (that commutes with rounding).

    Exact while ``|x * 2**f| < 2**51`` (or clamped below it) and ``|f| <= 1000``: scaling by a
    power of two is exact (an underflow loses only values below 2**-1022, which round to 0, or to
    -1 under TRN, where flooring ``x`` first keeps that -1), and every other step rounds,
    halves or subtracts integers and half-integers below 2**52. The tie-breaking modes never
    add 1/2 to an arbitrary double (``0.49999999999999994 + 0.5`` rounds to 1.0): they round
    ``u = 2s`` first, e.g. ``floor(s + 1/2) == ceil(floor(u) / 2)``.
    """
    if mode == "TRN" and f < 0:
        np.floor(x, out=r)
        np.multiply(r, math.ldexp(1.0, f), out=r)
        if clip is not None:
            np.clip(r, clip[0], clip[1], out=r)
        return np.floor(r, out=r)
    if mode in ("RND", "RND_MIN_INF", "RND_INF"):
        np.multiply(x, math.ldexp(1.0, f + 1), out=r)
        if clip is not None:
            np.clip(r, 2 * clip[0], 2 * clip[1], out=r)
        if mode == "RND":  # floor((floor(u) + 1) / 2) == ceil(floor(u) / 2)
            np.floor(r, out=r)
            np.multiply(r, 0.5, out=r)
            return np.ceil(r, out=r)
        if mode == "RND_MIN_INF":  # ceil((ceil(u) - 1) / 2) == floor(ceil(u) / 2)
            np.ceil(r, out=r)
            np.multiply(r, 0.5, out=r)
            return np.floor(r, out=r)
        # RND_INF: with t = trunc(u), t/2 rounded away from zero is t - trunc(t/2)
        np.trunc(r, out=r)
        q = np.multiply(r, 0.5)
        np.trunc(q, out=q)
        return np.subtract(r, q, out=r)
    np.multiply(x, math.ldexp(1.0, f), out=r)
    if clip is not None:
        np.clip(r, clip[0], clip[1], out=r)
    if mode == "TRN":
        return np.floor(r, out=r)
    if mode == "TRN_ZERO":
        return np.trunc(r, out=r)
    if mode == "RND_CONV":
        return np.rint(r, out=r)
    np.abs(r, out=r)  # RND_ZERO: ceil(|s| - 1/2) with the sign of s (|s| - 1/2 is exact)
    np.subtract(r, 0.5, out=r)
    np.ceil(r, out=r)
    return np.copysign(r, x, out=r)


def _wrap_chunk(r: np.ndarray, t: FixedType, lo: int, hi: int) -> None:
    """Apply WRAP (with t.sat_bits) in place to integer-valued float64 codes, |r| < 2**51 and
    width <= 50: every product below is by a power of two, every sum below 2**52, so exact."""
    w, n = t.width, t.sat_bits
    if n == 0:  # r - 2**w * floor((r - lo) / 2**w): into [lo, lo + 2**w)
        q = np.multiply(r, 2.0**-w)
        np.subtract(q, lo * 2.0**-w, out=q)
        np.floor(q, out=q)
        np.multiply(q, 2.0**w, out=q)
        np.subtract(r, q, out=r)
        return
    # out-of-range codes keep their low w - n bits under forced top bits; the rest is in range
    bad = r < lo
    bad |= r > hi
    idx = np.flatnonzero(bad)
    v = r[idx]
    k = 2.0 ** (w - n)
    low = v - np.floor(v * (1.0 / k)) * k  # v mod 2**(w - n)
    if t.signed:  # the sign bit of the source, then n - 1 copies of its complement
        r[idx] = low + np.where(v < 0, -(2.0 ** (w - 1)), 2.0 ** (w - 1) - k)
    else:  # unsigned: the top n bits set, on underflow too
        r[idx] = low + (2.0**w - k)


def _round_exact(s: np.ndarray, mode: str) -> np.ndarray:
    """Round float64 ``s`` to integers by an ap_fixed mode, exactly for every finite value;
    +-inf stays +-inf. Ties are found on ``|s|``, whose fraction ``|s| - floor(|s|)`` is exact
    (for negative ``s`` the fraction ``s - floor(s)`` is not: -0.49999999999999994 + 1
    rounds to 0.5)."""
    if mode == "TRN":
        return np.floor(s)
    if mode == "TRN_ZERO":
        return np.trunc(s)
    if mode == "RND_CONV":
        return np.rint(s)
    a = np.abs(s)
    fl = np.floor(a)
    with np.errstate(invalid="ignore"):
        frac = a - fl  # NaN for infinities: every comparison below is False
        up = frac > 0.5
        tie = frac == 0.5
    if mode == "RND":  # ties toward +inf: up in magnitude when positive
        up |= tie & (s >= 0)
    elif mode == "RND_MIN_INF":
        up |= tie & (s < 0)
    elif mode == "RND_INF":
        up |= tie
    # RND_ZERO: ties stay down in magnitude
    fl += up
    return np.copysign(fl, s, out=fl)


def _round_shift(codes: np.ndarray, shift: int, mode: str) -> np.ndarray:
    """Integer codes divided by 2**shift, rounded by an ap_fixed mode (exact, integer only).
    int64 codes with shift <= 62, or uint64 codes with shift <= 63."""
    typ = codes.dtype.type
    fl = codes >> typ(shift)
    rem = codes & typ((1 << shift) - 1)  # two's complement: in [0, 2**shift)
    if mode == "TRN":
        return fl
    if mode == "TRN_ZERO":
        return fl + ((codes < 0) & (rem != 0)) if typ is np.int64 else fl
    half = typ(1 << (shift - 1))
    up = rem > half
    tie = rem == half
    if mode == "RND":
        up |= tie
    elif mode == "RND_ZERO":
        if typ is np.int64:
            up |= tie & (codes < 0)
    elif mode == "RND_INF":
        up |= tie & (codes > 0)
    elif mode == "RND_CONV":
        up |= tie & ((fl & typ(1)) == 1)
    return fl + up.astype(codes.dtype)


def cast_asserts(src: FixedType, dst: FixedType) -> bool:
    """True when the C++ assignment ``dst = src`` aborts a C-simulation compiled without
    NDEBUG, as hls4ml compiles it.

    ap_fixed's cast reads the bit just below the new lsb before checking that it lies inside
    the source, and ``ap_private::get_bit`` asserts when it does not: a cast that drops more
    bits than the source holds (``src.fractional - dst.fractional > src.width``) under any
    rounding mode but TRN (TRN_ZERO from an unsigned source is TRN). With NDEBUG the bit is
    discarded and the result is the one :meth:`FixedType.cast_codes` computes.
    """
    if dst.rounding == "TRN" or (dst.rounding == "TRN_ZERO" and not src.signed):
        return False
    return src.fractional - dst.fractional > src.width


# ------------------------------------------------------------------ result types
def mul_type(a: FixedType, b: FixedType) -> FixedType:
    """Type of ``a * b`` in ap_fixed: ``ap_fixed<W1+W2, I1+I2>`` (signed if either is).
    Always exact: no product of values of ``a`` and ``b`` overflows it."""
    return FixedType(a.width + b.width, a.integer + b.integer, a.signed or b.signed)


def add_type(a: FixedType, b: FixedType) -> FixedType:
    """Type of ``a + b`` in ap_fixed: one integer bit more than the wider operand (an unsigned
    operand next to a signed one counts one bit more), the finer grid, signed if either is."""
    i = max(a.integer + (b.signed and not a.signed), b.integer + (a.signed and not b.signed)) + 1
    f = max(a.fractional, b.fractional)
    return FixedType(i + f, i, a.signed or b.signed)


def sub_type(a: FixedType, b: FixedType) -> FixedType:
    """Type of ``a - b`` in ap_fixed: as ``add_type`` but always signed."""
    return add_type(a, b).replace(signed=True)


def accum_type(t: FixedType, n_terms: int) -> FixedType:
    """The narrowest type on ``t``'s grid that holds every sum of ``n_terms`` values of ``t``
    (``n_terms >= 1``). For signed ``t`` that is ``ceil(log2(n))`` more integer bits, as a
    balanced tree of ap_fixed additions; unsigned sums can need fewer."""
    n = int(n_terms)
    if n < 1:
        raise ValueError(f"accum_type needs n_terms >= 1, got {n_terms!r}")
    return FixedType.for_codes(n * t.min_code, n * t.max_code, t.lsb_exp)


def dot_interval_codes(lo, hi, weight):
    """Exact integer bounds of ``x @ weight`` for every integer ``x`` with
    ``lo <= x <= hi`` elementwise (codes on any grids: the result is on the product grid).

    ``lo``/``hi`` have shape (n_in,), ``weight`` (n_in, n_out). int64 arrays when every partial
    sum provably fits, otherwise Python ints (object arrays)."""
    lo, hi, w = (np.asarray(a) for a in (lo, hi, weight))
    for name, a in (("lo", lo), ("hi", hi), ("weight", w)):
        if a.dtype.kind not in "iuO":
            raise ValueError(f"dot_interval_codes needs integer {name}, got dtype {a.dtype}")
    if lo.size and bool(np.any(lo > hi)):
        raise ValueError("dot_interval_codes needs lo <= hi")
    big = max((int(abs(v)) for a in (lo, hi) for v in (a.min(initial=0), a.max(initial=0))), default=0)
    wsum = int(np.abs(w.astype(object)).sum(axis=0).max(initial=0)) if w.size else 0
    if big * wsum < 2**62 and w.dtype.kind != "O" and lo.dtype.kind != "O" and hi.dtype.kind != "O":
        lo, hi, w = lo.astype(np.int64), hi.astype(np.int64), w.astype(np.int64)
    else:
        lo, hi, w = (a.astype(object) for a in (lo, hi, w))
    pos, neg = np.maximum(w, 0), np.minimum(w, 0)
    return lo @ pos + hi @ neg, hi @ pos + lo @ neg


def dot_interval(lo, hi, weight):
    """Exact bounds of ``x @ weight`` for every ``x`` with ``lo <= x <= hi`` elementwise.

    ``lo``/``hi`` have shape (n_in,), ``weight`` (n_in, n_out); all values lie on fixed-point
    grids. The float64 sums are exact while every partial sum stays below 2**53 steps of the
    product grid (checked); beyond that the bounds are computed in integers and rounded
    outward to float64, so an accumulator sized from them never overflows.
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(np.isfinite(w))):
        raise ValueError("dot_interval needs finite bounds and weights")
    pos, neg = np.maximum(w, 0.0), np.minimum(w, 0.0)
    gx, gw = _grid_exp(np.concatenate([lo.ravel(), hi.ravel()])), _grid_exp(w)
    # every term and partial sum is a multiple of 2**(gx+gw) bounded by mag: exact below 2**53
    mag = np.maximum(np.abs(lo), np.abs(hi)) @ np.abs(w)
    if not mag.size or float(mag.max()) * (1 + 2.0**-20) < math.ldexp(1.0, 52 + gx + gw):
        return lo @ pos + hi @ neg, hi @ pos + lo @ neg
    klo, khi = dot_interval_codes(_to_codes(lo, gx), _to_codes(hi, gx), _to_codes(w, gw))
    return _codes_to_float(klo, gx + gw, down=True), _codes_to_float(khi, gx + gw, down=False)


def on_grid(values, t: FixedType) -> np.ndarray:
    """``values`` rounded onto ``t``'s grid with ``t``'s rounding mode but without any overflow
    handling: the result may lie outside ``t``'s range (compare it with ``t.min``/``t.max`` to
    see whether a conversion to ``t`` overflows)."""
    # signed, so that values below an unsigned type's 0 stay below it (and are seen to overflow)
    return t.replace(width=t.width + 65, integer=t.integer + 65, signed=True, overflow="SAT").quantize(values)


def propose_input_type(x, max_width: int = 16) -> FixedType:
    """The fixed-point type for data ``x`` (e.g. a model's training inputs, for
    ``freeze(input_type=...)``): the narrowest type that holds every value exactly (the
    coarsest grid no coarser than 1, unsigned when no value is negative), e.g. ``ufixed<5,5>``
    for the digits' 0..16 and ``ufixed<5,1>`` for those divided by 16. When that needs more
    than ``max_width`` bits, the ``max_width``-bit type that holds the range, rounding to nearest
    and saturating: the data are then not on its grid, and ``t.quantize(x)`` puts them there
    (``t.contains(x)`` says which case it is)."""
    x = np.asarray(x, dtype=np.float64)
    if not x.size or not np.all(np.isfinite(x)):
        raise ValueError("propose_input_type needs finite data (no NaN or infinity, at least one value)")
    lo, hi = float(x.min()), float(x.max())
    exact = FixedType.for_range(min(lo, 0.0), max(hi, 0.0), min(_grid_exp(x.ravel()), 0))
    if exact.width <= max_width:
        return exact
    signed = lo < 0
    top = max(abs(lo), abs(hi))
    integer = max(math.frexp(top)[1], 0) + signed  # 2**integer > top (one more when top is a power of two)
    return FixedType(int(max_width), integer, signed, "RND", "SAT")


def _grid_exp(v: np.ndarray) -> int:
    """Exponent of the coarsest power-of-two grid holding every value of ``v``."""
    v = v[v != 0]
    if not v.size:
        return 0
    m, e = np.frexp(v)
    mant = np.ldexp(np.abs(m), 53).astype(np.int64)  # 53-bit integer mantissas
    low = mant & -mant
    return int((np.log2(low.astype(np.float64)).astype(np.int64) + e - 53).min())


def _to_codes(v: np.ndarray, g: int) -> np.ndarray:
    return np.array([int(math.ldexp(float(a), -g)) for a in v.ravel()], dtype=object).reshape(v.shape)


def _codes_to_float(k: np.ndarray, g: int, down: bool) -> np.ndarray:
    out = np.empty(k.shape, dtype=np.float64)
    for i, c in enumerate(np.asarray(k, dtype=object).ravel().tolist()):
        v = math.ldexp(float(c), g)  # nearest; step outward when that lost bits
        exact = int(math.ldexp(v, -g)) if math.isfinite(v) else None
        if exact is not None and exact != c:
            if down and exact > c:
                v = math.nextafter(v, -math.inf)
            elif not down and exact < c:
                v = math.nextafter(v, math.inf)
        out.reshape(-1)[i] = v
    return out
