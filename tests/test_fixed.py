"""Unit tests of edgebnn.fixed with exact reference values (tests/test_fixed_apfixed.py proves
the same semantics against the ap_fixed headers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgebnn.fixed import (
    OVERFLOW_MODES,
    ROUNDING_MODES,
    FixedType,
    accum_type,
    add_type,
    cast_asserts,
    dot_interval,
    dot_interval_codes,
    mul_type,
    sub_type,
)

F = FixedType.from_string


# ----------------------------------------------------------------------------- strings
@pytest.mark.parametrize(
    "text, canonical, expected",
    [
        ("fixed<8,3,RND_CONV,SAT>", "fixed<8,3,RND_CONV,SAT>", FixedType(8, 3, True, "RND_CONV", "SAT")),
        ("ufixed<6,0>", "ufixed<6,0>", FixedType(6, 0, False)),
        ("int<4>", "int<4>", FixedType(4, 4, True)),
        ("uint<3>", "uint<3>", FixedType(3, 3, False)),
        ("ap_int<4>", "int<4>", FixedType(4, 4, True)),
        ("ap_uint<1>", "uint<1>", FixedType(1, 1, False)),
        ("ap_fixed<8,3,AP_RND_CONV,AP_SAT>", "fixed<8,3,RND_CONV,SAT>", FixedType(8, 3, True, "RND_CONV", "SAT")),
        ("ap_ufixed<8,0,AP_RND,AP_SAT_SYM,0>", "ufixed<8,0,RND,SAT_SYM>", FixedType(8, 0, False, "RND", "SAT_SYM")),
        ("ap_fixed<8,3,AP_RND_CONV,AP_WRAP,2>", "fixed<8,3,RND_CONV,WRAP,2>", FixedType(8, 3, True, "RND_CONV", "WRAP", 2)),
        ("fixed<16,6,TRN,WRAP,0>", "fixed<16,6>", FixedType(16, 6)),  # hls4ml's own printing
        ("fixed<8,3,RND>", "fixed<8,3,RND>", FixedType(8, 3, True, "RND")),
        ("fixed<8,3,TRN,SAT_ZERO>", "fixed<8,3,TRN,SAT_ZERO>", FixedType(8, 3, True, "TRN", "SAT_ZERO")),
        ("fixed<8,-3>", "fixed<8,-3>", FixedType(8, -3)),
        ("ufixed<4,10,RND_MIN_INF>", "ufixed<4,10,RND_MIN_INF>", FixedType(4, 10, False, "RND_MIN_INF")),
        (" fixed < 8 , 3 > ", "fixed<8,3>", FixedType(8, 3)),
        ("fixed<8,8>", "int<8>", FixedType(8, 8)),
        ("fixed<8,8,RND>", "fixed<8,8,RND>", FixedType(8, 8, True, "RND")),
        ("fixed<8,3,rnd_zero,sat>", "fixed<8,3,RND_ZERO,SAT>", FixedType(8, 3, True, "RND_ZERO", "SAT")),
        ("fixed<1,1,TRN_ZERO,WRAP,1>", "fixed<1,1,TRN_ZERO,WRAP,1>", FixedType(1, 1, True, "TRN_ZERO", "WRAP", 1)),
        ("ufixed<64,64,RND_INF,SAT>", "ufixed<64,64,RND_INF,SAT>", FixedType(64, 64, False, "RND_INF", "SAT")),
    ],
)
def test_parse_and_print(text, canonical, expected):
    t = F(text)
    assert t == expected
    assert str(t) == canonical
    assert F(str(t)) == t
    assert F(t.cpp()) == t


def test_every_mode_round_trips():
    for r in ROUNDING_MODES:
        for o in OVERFLOW_MODES:
            for n in (0, 1, 3):
                t = FixedType(6, -2, False, r, o, n)
                assert F(str(t)) == t
                assert F(t.cpp()) == t


def test_cpp_spelling():
    assert F("fixed<8,3,RND_CONV,SAT>").cpp() == "ap_fixed<8,3,AP_RND_CONV,AP_SAT,0>"
    assert F("ufixed<6,0>").cpp() == "ap_ufixed<6,0,AP_TRN,AP_WRAP,0>"
    assert F("uint<3>").cpp() == "ap_ufixed<3,3,AP_TRN,AP_WRAP,0>"


def test_constructor_normalizes_mode_spellings():
    assert FixedType(8, 3, True, "ap_rnd_conv", "AP_SAT") == FixedType(8, 3, True, "RND_CONV", "SAT")
    assert FixedType(8, 3, 1).signed is True  # QKeras-style keep_negative=1
    assert FixedType(8, 3, 0).signed is False


def test_hls4ml_reads_our_strings_identically():
    fpga = pytest.importorskip("hls4ml.backends.fpga.fpga_backend")
    for text in ("fixed<8,3,RND_CONV,SAT>", "ufixed<6,0>", "fixed<8,3,RND,WRAP,2>", "fixed<16,-2,TRN_ZERO,SAT_SYM>"):
        p = fpga.FPGABackend.convert_precision_string(text)
        t = F(text)
        assert (p.width, p.integer, p.signed) == (t.width, t.integer, t.signed)
        assert (str(p.rounding_mode), str(p.saturation_mode), p.saturation_bits) == (t.rounding, t.overflow, t.sat_bits)
        assert F(str(p)) == t  # and we read hls4ml's printing


@pytest.mark.parametrize(
    "text",
    [
        "fixed<0,3>",
        "fixed<8>",
        "fixed<8,3,FOO>",
        "fixed<8,3,RND,BAR>",
        "fixed<8,3,RND,WRAP,9>",
        "fixed<8,3,RND,WRAP,-1>",
        "float",
        "fixed<8,3.5>",
        "int<4,2>",
        "",
        "fixed<8,3,RND,SAT,0,1>",
        "fixed<8,3,>",
        "ap_fixed<8,3",
        "fixed<-2,3>",
        "uint<0>",
    ],
)
def test_invalid_strings_name_the_string(text):
    with pytest.raises(ValueError) as err:
        F(text)
    assert repr(text) in str(err.value)


def test_invalid_parameters():
    with pytest.raises(ValueError, match="width"):
        FixedType(0, 0)
    with pytest.raises(ValueError, match="width"):
        FixedType(8.0, 3)
    with pytest.raises(ValueError, match="integer"):
        FixedType(8, 3.0)
    with pytest.raises(ValueError, match="'ROUND'"):
        FixedType(8, 3, True, "ROUND")
    with pytest.raises(ValueError, match="'CLAMP'"):
        FixedType(8, 3, True, "TRN", "CLAMP")
    with pytest.raises(ValueError, match="saturation bits"):
        FixedType(4, 3, True, "TRN", "WRAP", 5)
    with pytest.raises(ValueError, match="signed"):
        FixedType(4, 3, 2)
    with pytest.raises(ValueError, match="42"):
        F(42)


# -------------------------------------------------------------------------- properties
@pytest.mark.parametrize(
    "text, lsb, lo, hi, min_code, max_code",
    [
        ("fixed<8,3>", 2.0**-5, -4.0, 4 - 2.0**-5, -128, 127),
        ("ufixed<8,0>", 2.0**-8, 0.0, 1 - 2.0**-8, 0, 255),
        ("fixed<1,1>", 1.0, -1.0, 0.0, -1, 0),
        ("ufixed<1,0>", 0.5, 0.0, 0.5, 0, 1),
        ("fixed<1,-3>", 2.0**-4, -(2.0**-4), 0.0, -1, 0),
        ("fixed<4,-2>", 2.0**-6, -(2.0**-3), 7 * 2.0**-6, -8, 7),
        ("fixed<5,8>", 8.0, -128.0, 120.0, -16, 15),
        ("ufixed<6,10>", 16.0, 0.0, 1008.0, 0, 63),
        ("int<2>", 1.0, -2.0, 1.0, -2, 1),
        ("fixed<53,1>", 2.0**-52, -1.0, 1 - 2.0**-52, -(2**52), 2**52 - 1),
    ],
)
def test_grid_and_range(text, lsb, lo, hi, min_code, max_code):
    t = F(text)
    assert (t.lsb, t.min, t.max, t.min_code, t.max_code) == (lsb, lo, hi, min_code, max_code)
    assert t.lsb_exp == t.integer - t.width == -t.fractional
    assert t.contains([lo, hi]) and not t.contains([hi + lsb]) and not t.contains([lo - lsb])


def test_code_dtypes():
    assert F("fixed<64,10>").code_dtype == np.int64
    assert F("ufixed<63,0>").code_dtype == np.int64
    assert F("ufixed<64,0>").code_dtype == np.uint64
    assert F("fixed<65,0>").code_dtype == np.dtype(object)
    assert F("ufixed<64,0>").max_code == 2**64 - 1
    assert F("fixed<64,64>").min_code == -(2**63)


# ---------------------------------------------------------------------------- rounding
TIES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -2.25, 2.75, -0.75, 0.25]
ROUNDED = {
    "TRN": [-3, -2, -1, 0, 1, 2, -3, 2, -1, 0],
    "TRN_ZERO": [-2, -1, 0, 0, 1, 2, -2, 2, 0, 0],
    "RND": [-2, -1, 0, 1, 2, 3, -2, 3, -1, 0],
    "RND_ZERO": [-2, -1, 0, 0, 1, 2, -2, 3, -1, 0],
    "RND_INF": [-3, -2, -1, 1, 2, 3, -2, 3, -1, 0],
    "RND_MIN_INF": [-3, -2, -1, 0, 1, 2, -2, 3, -1, 0],
    "RND_CONV": [-2, -2, 0, 0, 2, 2, -2, 3, -1, 0],
}


@pytest.mark.parametrize("mode", ROUNDING_MODES)
@pytest.mark.parametrize("shape", ["fixed<8,8>", "fixed<12,4>", "fixed<6,9>", "fixed<60,50>", "fixed<80,60>"])
def test_rounding_modes_on_ties(mode, shape):
    t = F(shape).replace(rounding=mode)
    x = np.array(TIES) * t.lsb
    assert t.codes(x).tolist() == ROUNDED[mode]
    assert t.quantize(x).tolist() == [c * t.lsb for c in ROUNDED[mode]]
    assert [t.code_of(v) for v in x] == ROUNDED[mode]


@pytest.mark.parametrize("mode", ROUNDING_MODES)
def test_rounding_next_to_one_half(mode):
    # 0.5 - 2**-54 is below the tie: every mode rounds it like 0.4; s + 0.5 would give 1.0
    t = FixedType(16, 16, True, mode)
    x = np.array([0.49999999999999994, -0.49999999999999994, 1.4999999999999998, -1.4999999999999998])
    expected = {"TRN": [0, -1, 1, -2], "TRN_ZERO": [0, 0, 1, -1]}.get(mode, [0, 0, 1, -1])
    assert t.codes(x).tolist() == expected
    assert t.replace(width=60, integer=60).codes(x).tolist() == expected  # the wide path too


def test_unsigned_rounding_of_negative_values():
    t = F("ufixed<8,8,RND,SAT>")
    assert t.codes([-0.5, -0.4, -0.6, -1e-300]).tolist() == [0, 0, 0, 0]
    assert F("ufixed<8,8,TRN,SAT>").codes([-1e-300, -0.0]).tolist() == [0, 0]
    assert F("ufixed<8,8,TRN,WRAP>").codes([-1e-300]).tolist() == [255]


# ---------------------------------------------------------------------------- overflow
SIGNED_IN = [-20, -9, -8, -7, 7, 8, 9, 20, 100]
SIGNED_OUT = {
    ("WRAP", 0): [-4, 7, -8, -7, 7, -8, -7, 4, 4],
    ("SAT", 0): [-8, -8, -8, -7, 7, 7, 7, 7, 7],
    ("SAT_ZERO", 0): [0, 0, -8, -7, 7, 0, 0, 0, 0],
    ("SAT_SYM", 0): [-7, -7, -7, -7, 7, 7, 7, 7, 7],
    ("WRAP", 1): [-4, -1, -8, -7, 7, 0, 1, 4, 4],  # sign bit forced to the source's sign
    ("WRAP", 2): [-8, -5, -8, -7, 7, 4, 5, 4, 4],  # and the next bit to its complement
    ("WRAP", 4): [-8, -8, -8, -7, 7, 7, 7, 7, 7],  # N == W saturates
}
UNSIGNED_IN = [-3, -1, 0, 15, 16, 20]
UNSIGNED_OUT = {
    ("WRAP", 0): [13, 15, 0, 15, 0, 4],
    ("SAT", 0): [0, 0, 0, 15, 15, 15],
    ("SAT_ZERO", 0): [0, 0, 0, 15, 0, 0],
    ("SAT_SYM", 0): [0, 0, 0, 15, 15, 15],
    ("WRAP", 1): [13, 15, 0, 15, 8, 12],  # top bit set on underflow too
    ("WRAP", 4): [15, 15, 0, 15, 15, 15],  # a negative source saturates to the maximum
}


@pytest.mark.parametrize("key", list(SIGNED_OUT))
@pytest.mark.parametrize("lsb_exp", [0, -6, 3])
def test_signed_overflow_modes(key, lsb_exp):
    t = FixedType(4, 4 + lsb_exp, True, "TRN", *key)
    x = np.ldexp(np.array(SIGNED_IN, dtype=float), lsb_exp)
    assert t.codes(x).tolist() == SIGNED_OUT[key]
    assert t.overflow_codes(np.array(SIGNED_IN)).tolist() == SIGNED_OUT[key]
    assert t.cast_codes(np.array(SIGNED_IN) * 8, lsb_exp - 3).tolist() == SIGNED_OUT[key]


@pytest.mark.parametrize("key", list(UNSIGNED_OUT))
def test_unsigned_overflow_modes(key):
    t = FixedType(4, 4, False, "TRN", *key)
    assert t.codes(np.array(UNSIGNED_IN, dtype=float)).tolist() == UNSIGNED_OUT[key]
    assert t.overflow_codes(np.array(UNSIGNED_IN)).tolist() == UNSIGNED_OUT[key]


def test_sat_sym_of_one_bit_and_unsigned_types_is_sat():
    assert F("fixed<1,1,TRN,SAT_SYM>").codes([-5.0, -1.0, 0.0, 5.0]).tolist() == [-1, -1, 0, 0]
    assert F("fixed<2,2,TRN,SAT_SYM>").codes([-5.0, -2.0, -1.0, 5.0]).tolist() == [-1, -1, -1, 1]


def test_rounding_happens_before_overflow():
    t = F("fixed<4,4,RND,SAT>")
    assert t.codes([7.4, 7.5, -8.5, -8.6]).tolist() == [7, 7, -8, -8]
    assert F("fixed<4,4,RND,SAT_ZERO>").codes([7.5, -8.5, -8.6]).tolist() == [0, -8, 0]
    assert F("fixed<4,4,RND,WRAP>").codes([7.5, -8.6]).tolist() == [-8, 7]


# ------------------------------------------------------------------ special doubles
def test_negative_zero_and_huge_doubles():
    t = F("fixed<8,3,RND_CONV,SAT>")
    q = t.quantize([-0.0, -1e-300, 1e300, -1e300, 1.7976931348623157e308])
    assert q.tolist() == [0.0, 0.0, t.max, t.min, t.max]
    assert not np.signbit(q[:2]).any()  # ap_fixed has no negative zero
    # WRAP keeps every bit of a huge double: 2**62 + 2**10 wraps to 1024 in 16 bits
    assert F("int<16>").codes([2.0**62 + 1024, -(2.0**62 + 1024), 1e300]).tolist() == [1024, -1024, 0]
    big = F("ufixed<64,64>").codes([1e19, 2.0**64 - 2048, 2.0**64, -1.0])
    assert big.dtype == np.uint64
    assert [int(v) for v in big] == [10**19, 2**64 - 2048, 0, 2**64 - 1]
    assert F("ufixed<64,64,TRN,SAT>").codes([1e300, -5.0]).tolist() == [2**64 - 1, 0]
    assert F("fixed<64,64,TRN,SAT>").codes([-1e300, 1e300]).tolist() == [-(2**63), 2**63 - 1]
    assert F("fixed<64,0,RND,WRAP>").codes([0.25]).tolist() == [2**62]


def test_subnormals():
    tiny = 5e-324
    assert F("fixed<8,8>").codes([tiny, -tiny]).tolist() == [0, -1]
    assert F("fixed<8,10>").codes([-tiny]).tolist() == [-1]  # scaling underflows; floor still -1
    assert F("fixed<8,10,RND>").codes([-tiny]).tolist() == [0]
    # ap_fixed reads a subnormal as (1.m) * 2**-1023: visible only past 1022 fraction bits
    t = FixedType(8, -1020)
    assert t.codes([tiny]).tolist() == [t.code_of(tiny)] == [1 << 5]


def test_nonfinite_input():
    t = F("fixed<8,3,RND_CONV,SAT>")
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="NaN or infinity"):
            t.quantize(np.array([0.5, bad]))
        with pytest.raises(ValueError, match="NaN or infinity"):
            t.codes(np.array([bad]))
        with pytest.raises(ValueError, match="NaN or infinity"):
            F("fixed<60,3>").codes(np.array([bad]))
    # allow_nonfinite reproduces ap_fixed: inf reads as 2**1024, NaN as +-(1.m) * 2**1024
    x = np.array([np.inf, -np.inf, np.nan, 1.0])
    assert t.codes(x, allow_nonfinite=True).tolist() == [127, -128, 127, 32]
    assert F("fixed<8,3>").codes(x, allow_nonfinite=True).tolist() == [0, 0, 0, 32]
    assert F("fixed<8,3,TRN,SAT_ZERO>").quantize(x, allow_nonfinite=True).tolist() == [0.0, 0.0, 0.0, 1.0]


def test_shapes_and_scalars():
    t = F("fixed<8,3,RND_CONV,SAT>")
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7
    assert t.quantize(x).shape == (2, 3, 4) and t.codes(x).shape == (2, 3, 4)
    assert t.quantize(0.3).shape == () and float(t.quantize(0.3)) == 0.3125
    assert t.codes(np.zeros((0, 5))).shape == (0, 5)
    assert t.quantize(np.float32(0.3)) == 0.3125
    x0 = x.copy()
    t.quantize(x)
    assert np.array_equal(x, x0)  # the input is never written


# -------------------------------------------------------------------------------- casts
def test_casts():
    src = F("fixed<16,6>")  # lsb 2**-10
    dst = F("fixed<8,3,RND_CONV,SAT>")  # lsb 2**-5: drop 5 bits
    codes = np.array([16, 48, -16, -48, 17, 32767, -32768, 15])
    expected = [0, 2, 0, -2, 1, 127, -128, 0]
    assert dst.cast_codes(codes, src.lsb_exp).tolist() == expected
    assert [dst.cast_code(int(c), src.lsb_exp) for c in codes] == expected
    # a cast is ap_fixed(double) of the same value
    assert dst.codes(src.from_codes(codes)).tolist() == expected
    # widening: shift left, exact
    assert src.cast_codes(np.array([-128, 127]), dst.lsb_exp).tolist() == [-4096, 4064]
    # shift left beyond 64 bits: int<32> -> fixed<48,16> (32 more fraction bits)
    k = np.array([2**31 - 1, -(2**31), 5])
    assert F("fixed<48,16>").cast_codes(k, 0).tolist() == [-(2**32), 0, 5 << 32]
    assert F("fixed<48,16,TRN,SAT>").cast_codes(k, 0).tolist() == [2**47 - 1, -(2**47), 5 << 32]
    # unsigned 64-bit source, a half step below 2**63 rounds up and saturates
    u = np.array([2**64 - 1, 2**64 - 2, 3], dtype=np.uint64)
    assert F("ufixed<63,0,RND,SAT>").cast_codes(u, -64).tolist() == [2**63 - 1, 2**63 - 1, 2]
    assert F("ufixed<63,0,TRN,WRAP>").cast_codes(u, -64).tolist() == [2**63 - 1, 2**63 - 1, 1]
    # dropping more bits than int64 holds: exact (Python ints inside)
    assert F("fixed<8,8,RND>").cast_codes(np.array([-(2**62), 2**62]), -63).tolist() == [0, 1]
    assert F("fixed<8,8,RND_INF>").cast_codes(np.array([-(2**62)]), -63).tolist() == [-1]


def test_cast_asserts():
    assert cast_asserts(F("fixed<4,-6>"), F("fixed<8,8,RND>"))  # drops 10 of 4 bits
    assert not cast_asserts(F("fixed<4,-6>"), F("fixed<8,8>"))  # TRN
    assert not cast_asserts(F("fixed<4,-6>"), F("fixed<8,2,RND>"))  # drops 4 of 4
    assert not cast_asserts(F("ufixed<4,-6>"), F("fixed<8,8,TRN_ZERO>"))


# --------------------------------------------------------------------------- wide types
def test_wide_types_use_python_ints():
    t = F("fixed<80,20,RND_CONV,SAT>")
    c = t.codes([1.5, -(2.0**19), 2.0**25, 2.0**-61 * 3])
    assert c.dtype == object
    assert c.tolist() == [3 << 59, -(2**79), 2**79 - 1, 2]  # 3 * 2**-60 = 1.5 lsb -> even
    assert t.quantize([1.5]).tolist() == [1.5]
    assert t.cast_codes(np.array([3, -3]), -1).tolist() == [3 << 59, -3 << 59]
    assert F("fixed<8,3>").cast_codes(np.array([2**75 + 2**60], dtype=object), -60).tolist() == [32]


# ------------------------------------------------------------ fast path == exact reference
def test_array_paths_match_the_scalar_reference():
    rng = np.random.default_rng(7)
    for _ in range(150):
        w = int(rng.choice([1, 2, 5, 8, 16, 31, 50, 51, 53, 60, 64]))
        t = FixedType(
            w,
            int(rng.integers(-8, w + 8)),
            bool(rng.integers(2)),
            str(rng.choice(ROUNDING_MODES)),
            str(rng.choice(OVERFLOW_MODES)),
            0,
        )
        if t.overflow == "WRAP" and rng.random() < 0.4:
            t = t.replace(sat_bits=int(rng.integers(1, w + 1)))
        span = 2.0 ** (t.integer + 1)
        ties = (rng.integers(-(2 ** min(w, 50)), 2 ** min(w, 50), 300) + rng.choice([0, 0.5, 0.25], 300)) * t.lsb
        x = np.concatenate([rng.uniform(-span, span, 300), ties, [0.0, -0.0, 1e300, -1e300, t.max, t.min]])
        assert t.codes(x).tolist() == [t.code_of(v) for v in x], str(t)
        s = FixedType(int(rng.integers(1, 64)), int(rng.integers(-8, 40)), bool(rng.integers(2)))
        sc = s.codes(rng.uniform(s.min, s.max, 300))
        assert t.cast_codes(sc, s.lsb_exp).tolist() == [t.cast_code(int(c), s.lsb_exp) for c in sc], f"{s} -> {t}"


def test_quantize_values_of_another_grid_equal_the_cast():
    rng = np.random.default_rng(3)
    src = F("fixed<16,6>")
    codes = rng.integers(src.min_code, src.max_code + 1, 10_000)
    for mode in ROUNDING_MODES:
        for over in OVERFLOW_MODES:
            dst = FixedType(6, 2, True, mode, over)
            cast = dst.from_codes(dst.cast_codes(codes, src.lsb_exp))
            assert np.array_equal(dst.quantize(src.from_codes(codes)), cast)


# ------------------------------------------------------------------------- type rules
def test_for_range_is_minimal():
    assert FixedType.for_range(-3, 5, 0) == FixedType(4, 4, True)
    assert FixedType.for_range(0, 0, 0) == FixedType(1, 1, False)
    assert FixedType.for_range(0, 1, -2) == FixedType(3, 1, False)
    assert FixedType.for_range(-0.5, 0.25, -2) == FixedType(2, 0, True)
    assert FixedType.for_range(-4, 3, 0) == FixedType(3, 3, True)
    assert FixedType.for_range(-4, 4, 0) == FixedType(4, 4, True)
    assert FixedType.for_codes(-(2**70), 2**70, -3) == FixedType(72, 69, True)
    rng = np.random.default_rng(0)
    for _ in range(500):
        lsb_exp = int(rng.integers(-10, 10))
        a, b = sorted(int(v) for v in rng.integers(-5000, 5000, 2))
        lo, hi = math.ldexp(a, lsb_exp), math.ldexp(b, lsb_exp)
        t = FixedType.for_range(lo, hi, lsb_exp)
        assert t.lsb_exp == lsb_exp and t.contains([lo, hi])
        if t.width > 1:
            narrower = t.replace(width=t.width - 1, integer=t.integer - 1)
            assert not narrower.contains([lo, hi])
    with pytest.raises(ValueError, match="grid"):
        FixedType.for_range(0.3, 1.0, 0)
    with pytest.raises(ValueError):
        FixedType.for_range(2.0, 1.0, 0)


def test_mul_add_sub_types():
    assert mul_type(F("fixed<8,3>"), F("fixed<4,1>")) == F("fixed<12,4>")
    assert mul_type(F("ufixed<8,0>"), F("fixed<2,2>")) == F("fixed<10,2>")
    assert mul_type(F("ufixed<8,0>"), F("ufixed<2,2>")) == F("ufixed<10,2>")
    assert add_type(F("fixed<8,3>"), F("fixed<4,1>")) == F("fixed<9,4>")
    assert add_type(F("ufixed<8,0>"), F("fixed<4,1>")) == F("fixed<10,2>")
    assert add_type(F("ufixed<4,4>"), F("ufixed<4,2>")) == F("ufixed<7,5>")
    assert sub_type(F("ufixed<4,4>"), F("ufixed<4,4>")) == F("fixed<5,5>")


def test_result_types_hold_every_result():
    types = [F(s) for s in ("fixed<3,1>", "ufixed<3,0>", "fixed<2,4>", "ufixed<2,-1>", "fixed<1,1>", "ufixed<1,1>")]
    for a in types:
        va = a.from_codes(np.arange(a.min_code, a.max_code + 1))
        for b in types:
            vb = b.from_codes(np.arange(b.min_code, b.max_code + 1))
            for rule, op in ((mul_type, np.multiply), (add_type, np.add), (sub_type, np.subtract)):
                r = rule(a, b)
                assert r.contains(op.outer(va, vb)), f"{rule.__name__}({a}, {b}) = {r}"


def test_accum_type():
    assert accum_type(F("fixed<8,3>"), 1) == F("fixed<8,3>")
    assert accum_type(F("fixed<8,3>"), 2) == F("fixed<9,4>")
    assert accum_type(F("fixed<8,3>"), 3) == F("fixed<10,5>")
    assert accum_type(F("fixed<8,3>"), 4) == F("fixed<10,5>")
    assert accum_type(F("fixed<8,3>"), 5) == F("fixed<11,6>")
    assert accum_type(F("ufixed<1,1>"), 3) == F("ufixed<2,2>")
    assert accum_type(F("ufixed<4,0>"), 16) == F("ufixed<8,4>")
    assert accum_type(F("fixed<2,2>"), 784) == F("fixed<12,12>")  # binary MNIST dense: +-784 sums
    for t in (F("fixed<5,2>"), F("ufixed<3,-1>"), F("fixed<1,1>")):
        for n in range(1, 40):
            acc = accum_type(t, n)
            ends = [n * t.min, n * t.max]
            assert acc.contains(ends)
            if acc.width > 1:
                assert not acc.replace(width=acc.width - 1, integer=acc.integer - 1).contains(ends)
    with pytest.raises(ValueError):
        accum_type(F("fixed<8,3>"), 0)


def test_dot_interval_is_exact_and_tight():
    lo, hi = np.array([-1.0, 0.0]), np.array([1.0, 2.0])
    w = np.array([[1.0, -2.0], [3.0, 0.0]])
    out_lo, out_hi = dot_interval(lo, hi, w)
    assert out_lo.tolist() == [-1.0, -2.0] and out_hi.tolist() == [7.0, 2.0]
    rng = np.random.default_rng(1)
    for _ in range(30):
        n_in, n_out = int(rng.integers(1, 8)), int(rng.integers(1, 5))
        xt, wt = F("fixed<6,2>"), F("fixed<3,1>")
        a = np.sort(rng.integers(xt.min_code, xt.max_code + 1, (2, n_in)), axis=0)
        w = rng.integers(wt.min_code, wt.max_code + 1, (n_in, n_out))
        out_lo, out_hi = dot_interval(xt.from_codes(a[0]), xt.from_codes(a[1]), wt.from_codes(w))
        corners = np.array(np.meshgrid(*[[a[0, i], a[1, i]] for i in range(n_in)])).reshape(n_in, -1).T
        vals = xt.from_codes(corners) @ wt.from_codes(w)  # the extremes of a box lie on its corners
        assert np.array_equal(out_lo, vals.min(axis=0)) and np.array_equal(out_hi, vals.max(axis=0))
        k_lo, k_hi = dot_interval_codes(a[0], a[1], w)
        assert np.array_equal(np.ldexp(k_lo.astype(float), xt.lsb_exp + wt.lsb_exp), out_lo)
        acc = FixedType.for_range(float(out_lo.min()), float(out_hi.max()), xt.lsb_exp + wt.lsb_exp)
        assert acc.contains(vals)


def test_dot_interval_beyond_float64():
    # 2**60 + 1 is not a double: the bounds are rounded outward, the codes stay exact
    lo, hi, w = np.array([0.0, 0.0]), np.array([2.0**60, 1.0]), np.array([[1.0], [1.0]])
    out_lo, out_hi = dot_interval(lo, hi, w)
    assert out_lo.tolist() == [0.0] and out_hi.tolist() == [2.0**60 + 256]
    assert dot_interval_codes(np.array([0, 0]), np.array([2**60, 1]), np.array([[1], [1]]))[1].tolist() == [2**60 + 1]
    big_lo, big_hi = dot_interval_codes(np.array([-(2**62)]), np.array([2**62]), np.array([[2**10, -3]]))
    assert big_lo.dtype == object and big_lo.tolist() == [-(2**72), -3 * 2**62]
    assert big_hi.tolist() == [2**72, 3 * 2**62]
