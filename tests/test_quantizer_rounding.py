"""The Keras quantizers round exactly as ``FixedType`` (ap_fixed) does, for every float32 input.

Exhaustive over all float32 values within ``ULPS`` ulps of every grid point and every tie of a
few types (a little beyond their range, both signs, -0.0, subnormals, the float32 extremes and
codes near 2**24, where float32 has no fraction bits left): one Keras call per (type, mode).
"""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

import edgebnn  # noqa: F401  (registers the Keras objects)
from edgebnn import forms
from edgebnn import quantizers as qz
from edgebnn.fixed import OVERFLOW_MODES, ROUNDING_MODES, FixedType

ULPS = 200
F32 = np.float32

# (width, integer, signed): fixed<4,2>, ufixed<3,1>, fixed<8,0>, fixed<6,6>, fixed<12,3>,
# fixed<1,1>, and a grid coarser than 1 (fixed<4,6>, lsb 4) where x * 2**f can underflow
GRIDS = [(4, 2, True), (3, 1, False), (8, 0, True), (6, 6, True), (12, 3, True), (1, 1, True), (4, 6, True)]


def _neighbours(base, n):
    """All float32 values within n ulps of each of ``base`` (float32), infinities dropped."""
    cols, up, down = [base], base, base
    with np.errstate(over="ignore"):  # past the largest float32 comes inf, dropped below
        for _ in range(n):
            up = np.nextafter(up, F32(np.inf))
            down = np.nextafter(down, F32(-np.inf))
            cols += [up, down]
    x = np.concatenate(cols)
    x = x[np.isfinite(x)]
    return np.unique(x.view(np.uint32)).view(F32)  # by bits: keeps -0.0 beside +0.0


def _sweep(width, integer, signed, n=ULPS):
    lsb = 2.0 ** (integer - width)
    lo, hi = (-(2 ** (width - 1)), 2 ** (width - 1) - 1) if signed else (0, 2**width - 1)
    margin = min(2**width, 64)  # a full wrap period beyond each end for small types
    k = np.arange(lo - margin, hi + margin + 1, dtype=np.float64)
    far = np.array([2.0**22, 2.0**23, 2.0**24, 2.0**25], dtype=np.float64)
    far = np.concatenate([far + d for d in (-2, -1, 0, 1, 2)])
    k = np.concatenate([k, far, -far])
    grid = np.concatenate([k * lsb, (k + 0.5) * lsb])  # grid points and ties (exact in float64)
    e = np.arange(-149, 128, dtype=np.float64)  # every float32 binade, the subnormals included
    extremes = np.concatenate([2.0**e, -(2.0**e), [np.finfo(F32).max, -np.finfo(F32).max]])
    base = np.concatenate([grid, extremes]).astype(F32)
    x = np.concatenate([_neighbours(base, n), [F32(-0.0), F32(0.0)]])
    return x


_SWEEPS = {}


def runs(fn, x):
    """``fn(x)`` as Keras runs it: eager, in a graph (grappler rewrites) and compiled by XLA."""
    x = tf.constant(x)
    return [keras.ops.convert_to_numpy(fn(x)), tf.function(fn)(x).numpy(), tf.function(fn, jit_compile=True)(x).numpy()]


def sweep(width, integer, signed):
    key = (width, integer, signed)
    if key not in _SWEEPS:
        _SWEEPS[key] = _sweep(*key)
    return _SWEEPS[key]


def assert_exact(got, x, t):
    want = t.quantize(x.astype(np.float64))
    got = np.asarray(got).astype(np.float64)
    bad = np.flatnonzero(got != want)
    if bad.size:
        i = bad[:5]
        raise AssertionError(
            f"{t}: {bad.size} of {x.size} differ, e.g. x={x[i].tolist()} keras={got[i].tolist()} fixed={want[i].tolist()}"
        )


def _qbits(t):
    """The quantized_bits whose grid is ``t`` (None for the 1-bit binary case)."""
    q = qz.QuantizedBits(t.width, t.integer - t.signed, keep_negative=t.signed, rounding=t.rounding, overflow=t.overflow)
    if t.signed and t.width == 1:
        assert q.hardware().kind == "binary"
        return None
    assert q.hardware() == forms.Fixed(t)
    return q


@pytest.mark.slow
@pytest.mark.parametrize("rounding,overflow", list(itertools.product(ROUNDING_MODES, OVERFLOW_MODES)))
def test_fixed_quantize_equals_fixed_type_on_every_float32_near_ties(rounding, overflow):
    for width, integer, signed in GRIDS:
        t = FixedType(width, integer, signed, rounding, overflow)
        x = sweep(width, integer, signed)
        assert_exact(keras.ops.convert_to_numpy(qz.fixed_quantize(x, t)), x, t)
        q = _qbits(t)
        if q is not None:  # the quantizer itself, as model.predict runs it
            for y in runs(lambda v, q=q: q(v, training=False), x)[1:]:
                assert_exact(y, x, t)


@pytest.mark.parametrize("rounding", ["RND_INF", "RND_MIN_INF"])
def test_issue_8_d1_regression(rounding):
    """-(1/2 - 2**-25) lsb is below the tie: ap_fixed gives 0, Keras gave -lsb."""
    q = qz.QuantizedBits(4, 1, rounding=rounding)  # fixed<4,2>, lsb 1/4
    x = np.float32(-(0.5 - 2.0**-25) * 0.25)
    assert float(x) == -(0.5 - 2.0**-25) * 0.25  # exact in float32
    assert float(q.type.quantize(float(x))) == 0.0
    assert float(keras.ops.convert_to_numpy(q(np.array([x])))[0]) == 0.0
    s = np.float32(-0.49999997)
    assert float(keras.ops.convert_to_numpy(qz._round_codes(keras.ops.convert_to_tensor([s]), rounding))[0]) == 0.0


@pytest.mark.parametrize("bits,integer", [(4, 2), (3, 0), (8, 3), (1, 1), (6, 8)])
def test_quantized_relu_is_its_fixed_type_on_every_float32_near_ties(bits, integer):
    q = qz.QuantizedRelu(bits, integer)
    hw = q.hardware()
    assert hw.kind == "fixed"
    x = sweep(bits, integer, False)
    for y in runs(lambda v: q(v, training=False), x):
        assert_exact(y, x, hw.type)


def test_wrap_of_huge_finite_values_is_exact():
    """Beyond 2**(23 + width) every float32 is a multiple of 2**width: WRAP gives 0, not NaN."""
    x = np.array([3e38, -3e38, 2.0**100, -(2.0**40) - 2.0**17, 2.0**30 + 2.0**8], dtype=F32)
    for t in (
        FixedType(4, 2, True, "RND_CONV", "WRAP"),
        FixedType(12, 3, True, "TRN", "WRAP"),
        FixedType(3, 1, False, "RND", "WRAP"),
        FixedType(8, 0, True, "RND_ZERO", "WRAP"),
    ):
        assert_exact(keras.ops.convert_to_numpy(qz.fixed_quantize(x, t)), x, t)


@pytest.mark.parametrize("rounding,overflow", list(itertools.product(ROUNDING_MODES, OVERFLOW_MODES)))
def test_nonfinite_inputs(rounding, overflow):
    """NaN stays NaN; +-inf saturate (SAT, SAT_SYM), give 0 (SAT_ZERO) or NaN (WRAP)."""
    t = FixedType(6, 3, True, rounding, overflow)
    y = keras.ops.convert_to_numpy(qz.fixed_quantize(np.array([np.nan, np.inf, -np.inf], F32), t))
    assert np.isnan(y[0])
    if overflow == "WRAP":
        assert np.isnan(y[1:]).all()
    elif overflow == "SAT_ZERO":
        np.testing.assert_array_equal(y[1:], [0.0, 0.0])
    else:
        low = t.min_code if overflow == "SAT" else -t.max_code
        np.testing.assert_array_equal(y[1:], [t.max_code * t.lsb, low * t.lsb])


def _sweep_around(points, n=ULPS):
    base = np.asarray(points, dtype=np.float64).astype(F32)
    return np.concatenate([_neighbours(base, n), [F32(-0.0)]])


@pytest.mark.parametrize("bits,symmetric", [(1, False), (3, False), (4, True), (8, False)])
def test_quantized_tanh_hard_rounds_the_exact_value(bits, symmetric):
    """p = 2 clip(x/2 + 1/2, 0, 1) - 1 = clip(x, -1, 1) exactly; float32 x/2 + 1/2 can round
    onto a tie of p m (e.g. x = 1.5/128 - 2**-40 gave 2/128 with 8 bits, not 1/128)."""
    q = qz.QuantizedTanh(bits, symmetric=symmetric)
    m = 2.0 ** (bits - 1)
    j = np.arange(-m - 4, m + 5)
    x = _sweep_around(np.concatenate([j / m, (j + 0.5) / m, [1.5 / 128 - 2.0**-40]]))
    p = np.clip(x.astype(np.float64), -1.0, 1.0)
    want = np.clip(np.rint(p * m) / m, -1.0 + symmetric / m, 1.0 - 1.0 / m)
    for y in runs(q, x):
        np.testing.assert_array_equal(y.astype(np.float64), want)


@pytest.mark.parametrize("bits,integer,slope", [(1, 0, 0.0), (3, 0, 0.0), (4, 1, 0.0), (4, 1, 0.25), (6, -1, 0.125), (3, 2, 1.0)])
def test_quantized_relu_sigmoid_rounds_the_exact_value(bits, integer, slope):
    q = qz.QuantizedRelu(bits, integer, use_sigmoid=1, negative_slope=slope)
    m, m_i, _ = q._consts()
    j = np.arange(-4, m * max(1, 1 / max(slope, 1e-9)) + 5) if slope else np.arange(-4, m + 5)
    t = np.concatenate([j / m, (j + 0.5) / m])  # grid points and ties of p = m (x / (2 m_i) + 1/2)
    if slope:
        t = np.concatenate([t, j / (slope * m), (j + 0.5) / (slope * m)])  # and of p * slope
    x = _sweep_around(2.0 * m_i * (t - 0.5))
    p = m * np.clip(x.astype(np.float64) / (2.0 * m_i) + 0.5, 0.0, 1.0)  # exact in float64 here
    want = m_i * np.clip(2.0 * np.rint(p) / m - 1.0, 0.0, 1.0 - 1.0 / m)
    if slope:
        want += m_i * slope * np.clip(2.0 * np.rint(p * slope) / (slope * m) - 1.0, -1.0, 0.0)
    for y in runs(q, x):
        bad = np.flatnonzero(y.astype(np.float64) != want)
        assert bad.size == 0, (x[bad[:4]].tolist(), y[bad[:4]].tolist(), want[bad[:4]].tolist())


def test_quantized_bits_auto_rounds_half_up_exactly():
    """z = floor(|x'|/s + 1/2): with s = 1, |x'| = 0.49999997 gives 0 (QKeras' float32 sum,
    0.49999997 + 0.5 = 1.0, gave 1)."""
    q = qz.QuantizedBits(4, 0, alpha="auto")  # M = 7: s = 2 max|x| / 14 = 1 for max|x| = 7
    below = float(np.nextafter(F32(0.5), F32(0)))
    x = np.array([7.0, below, -below, 0.5, -0.5, 1.5, 2.5, 6.49999952], F32).reshape(-1, 1)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(q(x)).ravel(), [7, 0, 0, 1, -1, 2, 3, 6])
    assert float(keras.ops.convert_to_numpy(q.scale(x)).ravel()[0]) == 1.0


@pytest.mark.parametrize("rounding", ["larq", "exact"])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 8, 12])
def test_dorefa_activations_round_the_product(k, rounding):
    """round(n clip(x, 0, 1)) / n with n = 2**k - 1, half to even: of the float32 product as larq
    computes it (which can land on a tie the real product is not on), or of the real product."""
    q = qz.DoReFa(k, rounding=rounding)
    n = 2**k - 1
    j = np.arange(-2, n + 3, dtype=np.float64)
    x = _sweep_around(np.concatenate([j / n, (j + 0.5) / n]), n=64)
    v = np.clip(x, F32(0), F32(1))
    if rounding == "larq":
        codes = np.rint((v * F32(n)).astype(F32)).astype(np.float64)  # float32 product, then half to even
    else:
        codes = np.rint(v.astype(np.float64) * n)  # v * n is exact in float64
    if k > 1:  # the two differ somewhere in every sweep with a scale that is not a power of two
        other = np.rint(v.astype(np.float64) * n) if rounding == "larq" else np.rint((v * F32(n)).astype(F32))
        assert np.any(codes != other)
    eager = keras.ops.convert_to_numpy(q(x))
    np.testing.assert_array_equal(eager, codes.astype(F32) / F32(n))
    # in a graph TensorFlow multiplies by 1/n instead of dividing (an ulp apart): compare the codes
    for y in runs(q, x)[1:]:
        bad = np.flatnonzero(np.rint(y.astype(np.float64) * n) != codes)
        assert bad.size == 0, (bad.size, x[bad[:4]].tolist(), y[bad[:4]].tolist(), codes[bad[:4]].tolist())
