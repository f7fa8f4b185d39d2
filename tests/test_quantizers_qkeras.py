"""QKeras quantizers with QKeras's numbers: forward and gradient at the edges, exact."""

import itertools

import keras
import numpy as np
import pytest

import edgebnn  # noqa: F401
from edgebnn import forms
from edgebnn import quantizers as qz
from edgebnn.fixed import FixedType

f32 = np.float32


def test_snake_case_names_are_the_classes():
    assert qz.quantized_bits is qz.QuantizedBits and qz.quantized_relu is qz.QuantizedRelu
    assert qz.binary is qz.Binary and qz.ternary is qz.Ternary and qz.quantized_tanh is qz.QuantizedTanh
    assert qz.quantized_po2 is qz.QuantizedPo2 and qz.quantized_relu_po2 is qz.QuantizedReluPo2
    assert qz.get("quantized_relu(4, 0)") == qz.QuantizedRelu(4, 0)
    assert qz.get("quantized_bits(4, 0, alpha='auto_po2')") == qz.QuantizedBits(4, 0, alpha="auto_po2")


def test_quantized_bits_one_bit_is_binary(fwd_grad):
    y, g = fwd_grad(qz.QuantizedBits(1, 3), [-2.0, -0.0, 0.0, 0.3])
    np.testing.assert_array_equal(y, [-1, 1, 1, 1])  # QKeras: sign with sign(0) = +1, whatever integer
    np.testing.assert_array_equal(g, [1, 1, 1, 1])
    assert qz.QuantizedBits(1, 0).hardware() == forms.Binary()
    y, _ = fwd_grad(qz.QuantizedBits(1, 0, keep_negative=False), [-1.0, 0.25, 0.5])
    np.testing.assert_array_equal(y, [0.0, 0.0, 0.5])  # ufixed<1,0>: 0.25 ties to even


def test_quantized_bits_numeric_alpha(fwd_grad):
    y, g = fwd_grad(qz.QuantizedBits(4, 0, alpha=0.5), [0.0625, 0.1875, -2.0, 1.0])
    np.testing.assert_array_equal(y, 0.5 * f32([0.0, 0.25, -1.0, 0.875]))  # alpha * quantized_bits(x)
    np.testing.assert_array_equal(g, [1, 1, 1, 1])
    hw = qz.QuantizedBits(4, 0, alpha=0.5).hardware()
    assert (hw.kind, hw.base.kind, hw.type, hw.scale) == ("scaled", "fixed", FixedType(4, 1, True, "RND_CONV", "SAT"), 0.5)
    assert hw == forms.Scaled(forms.Fixed(FixedType(4, 1, True, "RND_CONV", "SAT")), 0.5)
    y, _ = fwd_grad(qz.QuantizedBits(4, 0, alpha=[1.0, 0.25]), [[0.5, 0.5], [-1.0, -1.0]])
    np.testing.assert_array_equal(y, [[0.5, 0.125], [-1.0, -0.25]])
    assert qz.QuantizedBits(4, 0, alpha=[1.0, 0.25]).hardware().scale == (1.0, 0.25)


# Reference values below are QKeras 0.9.0's own outputs (TF 2.15), recorded with
# bench/reference_quantizers.py's reference environment.
_AUTO_REF = {  # quantized_bits(4, 0, alpha=...) on x = [col, 2 col], col = [0.5, -0.25, 0.125, -1]
    # "auto": s = 2 max|x| / 14, no refinement, not a power of two: the max maps to itself
    "auto": [
        [0.4285714626312256, 0.8571429252624512],
        [-0.2857142984867096, -0.5714285969734192],
        [0.1428571492433548, 0.2857142984867096],
        [-1.0, -2.0],
    ],
    "auto_po2": [[0.5, 1.0], [-0.25, -0.5], [0.125, 0.25], [-0.875, -1.75]],
}
_AUTO_1D_REF = {
    "auto": [0.30000001192092896, -0.10000000149011612, 0.10000000149011612, 0.699999988079071],
    "auto_po2": [0.25, -0.125, 0.046875, 0.75],
}  # 1-D: per-element po2 refinement


@pytest.mark.parametrize("alpha", ["auto", "auto_po2"])
def test_quantized_bits_auto_alpha(fwd_grad, alpha):
    col = f32([0.5, -0.25, 0.125, -1.0])
    x = np.stack([col, 2 * col], axis=1)  # the second channel is twice the first
    q = qz.QuantizedBits(4, 0, alpha=alpha)
    y, g = fwd_grad(q, x)
    np.testing.assert_array_equal(y, f32(_AUTO_REF[alpha]))
    np.testing.assert_array_equal(g, np.ones_like(x))
    hw = q.hardware(x)
    assert (hw.kind, hw.base.kind, hw.axis) == ("scaled", "grid", -1)
    codes = np.round(y / np.float32(hw.scale))
    assert np.abs(codes).max() == 7 and np.allclose(y, np.float32(hw.scale) * codes, rtol=1e-6)  # in [-7, 7]
    assert hw.type == FixedType(4, 4, True, "RND_INF", "SAT_SYM") and hw.base == forms.Grid(hw.type)
    assert q.hardware().scale is None  # depends on the tensor
    # integer bits: x / 2**integer is quantized, then scaled back
    y1, _ = fwd_grad(qz.QuantizedBits(4, 1, alpha=alpha), 2 * x)
    np.testing.assert_array_equal(y1, 2 * y)
    # scale_axis=0: one scale per row
    y0, _ = fwd_grad(qz.QuantizedBits(4, 0, alpha=alpha, scale_axis=0), x.T)
    np.testing.assert_array_equal(y0, y.T)
    y, _ = fwd_grad(q, [0.3, -0.1, 0.05, 0.7])
    np.testing.assert_array_equal(y, f32(_AUTO_1D_REF[alpha]))
    with pytest.raises(ValueError, match="2 bits"):
        qz.QuantizedBits(1, 0, alpha=alpha)


def test_quantized_relu_clips_output_to_relu_upper_bound(fwd_grad):
    # QKeras 0.9.0: with is_quantized_clip=False the output is also clipped to relu_upper_bound
    q = qz.QuantizedRelu(4, 1, relu_upper_bound=1.0, is_quantized_clip=False)
    y, g = fwd_grad(q, [0.9, 1.0, 1.125, 1.875, 5.0, -1.0])
    np.testing.assert_array_equal(y, f32([0.875, 1.0, 1.0, 1.0, 1.0, 0.0]))
    np.testing.assert_array_equal(g, f32([1, 1, 0, 0, 0, 0]))
    assert q.hardware().kind == "grid"  # min(conversion, 1.0) is not a plain conversion
    with pytest.raises(qz.NoHardwareForm, match="off its grid"):
        qz.QuantizedRelu(4, 1, relu_upper_bound=1.1, is_quantized_clip=False).hardware()
    assert qz.QuantizedRelu(4, 1, relu_upper_bound=1.0).hardware().kind == "fixed"  # is_quantized_clip wins


def test_binary_ternary_auto_1d_scale_per_element(fwd_grad):
    # QKeras 0.9.0's _get_scale averages over nothing for a 1-D tensor
    x = [1.0, -0.375, 0.0, 0.25]
    np.testing.assert_array_equal(
        np.ravel(qz.Binary(alpha="auto").scale(x)), f32([0.9999998807907104, 0.3749999701976776, 0.0, 0.2499999701976776])
    )
    np.testing.assert_array_equal(np.ravel(qz.Binary(alpha="auto_po2").scale(x)), f32([1.0, 0.5, 1.1920928955078125e-07, 0.25]))
    y, _ = fwd_grad(qz.Ternary(alpha="auto"), x + [0.1])
    np.testing.assert_array_equal(y, f32([0.9999998807907104, -0.3749999701976776, 0.0, 0.0, 0.0]))
    y, _ = fwd_grad(qz.Ternary(alpha="auto_po2"), x + [0.1])
    np.testing.assert_array_equal(y, f32([1.0, -0.5, 0.0, 0.25, 0.125]))


def test_quantized_bits_refuses_what_qkeras_ignores():
    with pytest.raises(ValueError, match="keep_negative"):
        qz.QuantizedBits(4, 0, keep_negative=False, alpha="auto")
    with pytest.raises(ValueError, match="stochastic"):
        qz.QuantizedBits(4, 0, alpha="auto", use_stochastic_rounding=True)
    with pytest.raises(ValueError, match="alpha"):
        qz.QuantizedBits(4, 0, alpha="po2")


@pytest.mark.parametrize("bits,integer", [(1, 0), (3, 1), (4, 0), (6, 2), (5, -1)])
def test_quantized_relu_is_ap_ufixed(fwd_grad, bits, integer):
    t = FixedType(bits, integer, False, "RND_CONV", "SAT")
    codes = np.arange(-40, 2 * (2**bits) + 40)
    x = np.concatenate([codes * t.lsb / 2, codes * t.lsb / 4, [-0.0, 0.0]]).astype(np.float32)  # ties included
    q = qz.QuantizedRelu(bits, integer)
    y, g = fwd_grad(q, x)
    np.testing.assert_array_equal(y.astype(np.float64), t.quantize(x.astype(np.float64)))
    np.testing.assert_array_equal(g, ((x > 0) & (x <= t.max)).astype(np.float32))  # 1 on (0, max]
    assert q.hardware() == forms.Fixed(t)


def test_quantized_relu_gradient_bounds(fwd_grad):
    # quantized_relu(3, 1): max = 2 - 2**-2 = 1.75
    x = [-1.0, -0.0, 0.0, 1e-7, 1.75, np.nextafter(f32(1.75), f32(2)), 3.0]
    _, g = fwd_grad(qz.QuantizedRelu(3, 1), x)
    np.testing.assert_array_equal(g, [0, 0, 0, 1, 1, 0, 0])
    _, g = fwd_grad(qz.QuantizedRelu(3, 1, is_quantized_clip=False, relu_upper_bound=3.0), x)
    np.testing.assert_array_equal(g, [0, 0, 0, 1, 1, 1, 1])
    _, g = fwd_grad(qz.QuantizedRelu(3, 1, is_quantized_clip=False), x + [1e9])
    np.testing.assert_array_equal(g, [0, 0, 0, 1, 1, 1, 1, 1])


def test_quantized_relu_negative_slope(fwd_grad):
    # bits 4 (3 magnitude bits), integer 1: step 0.25 up to 1.75; negative side
    # (2/8) * round(x * 0.25 * 8 / 2), down to -2 * 0.25 = -0.5
    q = qz.QuantizedRelu(4, 1, negative_slope=0.25)
    x = [-8.0, -2.0, -1.0, -0.5, -0.0, 0.125, 0.375, 1.0, 5.0]
    y, g = fwd_grad(q, x)
    np.testing.assert_array_equal(y, [-0.5, -0.5, -0.25, 0.0, 0.0, 0.0, 0.5, 1.0, 1.75])
    np.testing.assert_array_equal(g, [0.25, 0.25, 0.25, 0.25, 0.25, 1, 1, 1, 0])  # leaky_relu grad at 0
    hw = q.hardware()
    assert hw.kind == "grid" and hw.type.contains(np.float64(y)) and hw.type.signed  # not a cast
    # a slope below one step: the bound -2 * 2**-5 is off the step grid, the type is finer
    q = qz.QuantizedRelu(4, 1, negative_slope=2**-5)
    y, _ = fwd_grad(q, [-100.0, -8.0, -3.0])  # round(sigma x m / m_i): -12.5 -> -12, -1, -0.375 -> 0
    np.testing.assert_array_equal(y, [-(2**-4), -(2**-4), 0.0])
    assert q.hardware().type.contains(np.float64(y))
    with pytest.raises(ValueError, match="power of two"):
        qz.QuantizedRelu(4, 0, negative_slope=0.3)


def test_quantized_relu_sigmoid(fwd_grad):
    # bits 3, integer 1: p = 8 * clip(x/4 + 1/2, 0, 1); q = 2 * clip(2 round(p)/8 - 1, 0, 7/8)
    x = [-1.0, 0.25, 0.5, 0.75, 4.0]  # p = 2, 4.5 (tie -> 4), 5, 5.5 (-> 6), 8
    y, g = fwd_grad(qz.QuantizedRelu(3, 1, use_sigmoid=1), x)
    np.testing.assert_array_equal(y, [0.0, 0.0, 0.5, 1.0, 1.75])
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 0])
    hw = qz.QuantizedRelu(3, 1, use_sigmoid=1).hardware()
    assert (hw.kind, hw.type) == ("grid", FixedType(3, 1, False, "RND_CONV", "SAT"))


def test_quantized_tanh(fwd_grad):
    # QKeras 0.9.0's numbers: m = 4, step 0.25, hard tanh; symmetric=False (the default) keeps -1
    q = qz.QuantizedTanh(3)
    x = [-2.0, -1.0, -0.875, -0.625, -0.375, -0.0, 0.125, 0.375, 0.625, 0.75, 0.875, 1.0, 2.0]
    y, g = fwd_grad(q, x)
    np.testing.assert_array_equal(y, [-1.0, -1.0, -1.0, -0.5, -0.5, 0, 0, 0.5, 0.5, 0.75, 0.75, 0.75, 0.75])
    # gradient 1 where |x| <= 1 and the rounded value is inside the clip [-1, 0.75] (inclusive)
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0])
    assert q.hardware() == forms.Grid(FixedType(3, 1, True, "RND_CONV", "SAT"))  # not a cast
    q = qz.QuantizedTanh(3, symmetric=True)  # clip [-0.75, 0.75]
    y, g = fwd_grad(q, x)
    np.testing.assert_array_equal(y, [-0.75, -0.75, -0.75, -0.5, -0.5, 0, 0, 0.5, 0.5, 0.75, 0.75, 0.75, 0.75])
    np.testing.assert_array_equal(g, [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0])
    assert q.hardware() == forms.Grid(FixedType(3, 1, True, "RND_CONV", "SAT_SYM"))
    y, g = fwd_grad(qz.QuantizedTanh(3, use_real_tanh=True), [0.0, 0.5, 5.0])
    np.testing.assert_array_equal(y, f32([0.0, 0.5, 0.75]))  # tanh(0.5) * 4 = 1.85 -> 2
    assert g[0] == 1.0 and g[2] == 0.0
    np.testing.assert_allclose(g[1], 1 - np.tanh(0.5) ** 2, rtol=1e-6)


def _qkeras_hard_sigmoid(x):
    """QKeras's hard_sigmoid as it computes it: float32 ``0.5 * x + 0.5``, clipped."""
    x = np.asarray(x, np.float32)
    return np.clip(f32(0.5) * x + f32(0.5), f32(0), f32(1)).astype(np.float32)


def test_binary_tanh(fwd_grad):
    """QKeras's ``2 * round(hard_sigmoid(x)) - 1``: -1 at 0 (0.5 rounds to even) and for the
    positive x whose float32 x/2 + 1/2 is 0.5 (x <= 2**-24), +1 beyond; gradient 1 on [-1, 1]."""
    tiny = [2.0**-26, 2.0**-25, 2.0**-24, np.nextafter(f32(2.0**-24), f32(1)), 2.0**-23]
    x = np.array([-3.0, -1.0, -0.5, -1e-30, -0.0, 0.0, *tiny, 0.5, 1.0, 1.5], np.float32)
    y, g = fwd_grad(qz.get("binary_tanh"), x)
    np.testing.assert_array_equal(y, 2 * np.round(_qkeras_hard_sigmoid(x)) - 1)
    np.testing.assert_array_equal(y, [-1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0])
    assert qz.get("binary_tanh").hardware() == forms.Binary()


@pytest.mark.parametrize("bits,symmetric", [(1, False), (3, False), (4, True)])
def test_quantized_sigmoid(fwd_grad, bits, symmetric):
    """QKeras's clip(round(hard_sigmoid(x) * m) / m, symmetric / m, 1 - 1/m), m = 2**bits, on a
    dense sweep (ties of the grid and one float32 ulp around them included)."""
    m = 2.0**bits
    ties = (np.arange(-1, 2 * m + 2) + 0.5) / m * 2 - 1  # x where hard_sigmoid(x) * m is k + 1/2
    x = np.concatenate([np.linspace(-3, 3, 2001), ties, np.nextafter(ties, 9), np.nextafter(ties, -9)]).astype(np.float32)
    q = qz.QuantizedSigmoid(bits, symmetric=symmetric)
    y, g = fwd_grad(q, x)
    r = np.round(_qkeras_hard_sigmoid(x) * f32(m)) / f32(m)
    np.testing.assert_array_equal(y, np.clip(r, f32(symmetric / m), f32(1 - 1 / m)))
    h = f32(0.5) * x + f32(0.5)
    inside = (h >= 0) & (h <= 1) & (r >= symmetric / m) & (r <= 1 - 1 / m)  # where neither clip holds
    np.testing.assert_array_equal(g, np.where(inside, 0.5, 0.0))
    assert q.hardware() == forms.Grid(FixedType(bits, 0, False, "RND_CONV", "SAT"))
    assert q.hardware().type.contains(y.astype(np.float64))
    real = qz.QuantizedSigmoid(bits, use_real_sigmoid=True)
    y, _ = fwd_grad(real, [0.0, 10.0, -10.0])
    np.testing.assert_array_equal(y, [0.5, 1 - 1 / m, 0.0])
    assert qz.get(f"quantized_sigmoid({bits}, symmetric={symmetric})") == q


def test_binary(fwd_grad):
    x = [-2.0, -1e-30, -0.0, 0.0, 10.0]
    y, g = fwd_grad(qz.Binary(), x)
    np.testing.assert_array_equal(y, [-1, -1, 1, 1, 1])
    assert g[2] == g[3] == 1.0 and g[4] == 0.0  # alpha None: QKeras' tanh path, 1 - tanh^2
    np.testing.assert_allclose(g[0], 1 - np.tanh(2.0) ** 2, rtol=1e-5)
    y, _ = fwd_grad(qz.Binary(use_01=True), x)
    np.testing.assert_array_equal(y, [0, 0, 1, 1, 1])
    assert qz.Binary(use_01=True).hardware().kind == "unipolar"
    y, g = fwd_grad(qz.Binary(alpha=0.5), x)
    np.testing.assert_array_equal(y, [-0.5, -0.5, 0.5, 0.5, 0.5])
    np.testing.assert_array_equal(g, np.ones(5))


def test_binary_auto_alpha(fwd_grad):
    w = [[1.0, 0.75], [-3.0, -0.25]]  # mean(x k) = 2 and 0.5, mean(k k) = 1
    y, g = fwd_grad(qz.Binary(alpha="auto"), w)
    s = f32([2.0, 0.5]) / (f32(1) + f32(1e-7))  # QKeras divides by mean(kk) + epsilon
    np.testing.assert_array_equal(y, [[s[0], s[1]], [-s[0], -s[1]]])
    np.testing.assert_array_equal(g, np.ones((2, 2)))
    y, _ = fwd_grad(qz.Binary(alpha="auto_po2"), w)
    np.testing.assert_array_equal(y, [[2.0, 0.5], [-2.0, -0.5]])
    hw = qz.Binary(alpha="auto_po2").hardware(np.float32(w))
    assert (hw.kind, hw.base, hw.scale) == ("scaled", forms.Binary(), (2.0, 0.5))


def test_ternary(fwd_grad):
    t = f32(0.33)
    x = [-2.0, -t, np.nextafter(-t, f32(0)), -0.0, 0.0, t, 10.0]
    y, g = fwd_grad(qz.Ternary(), x)
    np.testing.assert_array_equal(y, [-1, -1, 0, 0, 0, 1, 1])  # |x| = threshold maps to +-1
    assert g[3] == g[4] == 1.0 and g[6] == 0.0  # alpha None: 1 - tanh^2
    y, g = fwd_grad(qz.Ternary(alpha=1.5, threshold=0.5), [-0.5, -0.4999, 0.0, 0.5])
    np.testing.assert_array_equal(y, [-1.5, 0, 0, 1.5])
    np.testing.assert_array_equal(g, [1, 1, 1, 1])
    with pytest.raises(ValueError, match="threshold"):
        qz.Ternary(alpha="auto", threshold=0.3)


def test_ternary_auto_alpha(fwd_grad):
    x = np.float32([[1.0], [-1.0], [0.1], [0.0]])
    y, g = fwd_grad(qz.Ternary(alpha="auto"), x)
    # s = 2/3 max|x|; k = [|s round(x/s)| >= s/2] sign(x) = [1, -1, 0, 0]; s = 0.5 / (0.5 + eps)
    s = f32(0.5) / (f32(0.5) + f32(1e-7))
    np.testing.assert_array_equal(y, s * f32([[1], [-1], [0], [0]]))
    np.testing.assert_array_equal(g, np.ones_like(x))
    y, _ = fwd_grad(qz.Ternary(alpha="auto_po2"), x)
    np.testing.assert_array_equal(y, [[1], [-1], [0], [0]])
    assert qz.Ternary(alpha="auto_po2").hardware(x).scale == 1.0
    assert qz.Ternary().hardware().kind == "ternary"


def test_quantized_po2(fwd_grad):
    q = qz.QuantizedPo2(4)  # exponents [-4, 3]
    x = [0.0, -0.0, 1e-8, 2**-6, 0.75, 1.5, -3.0, 100.0, -100.0]
    y, g = fwd_grad(q, x)
    np.testing.assert_array_equal(y, [2**-4, 2**-4, 2**-4, 2**-4, 1.0, 2.0, -4.0, 8.0, -8.0])
    np.testing.assert_array_equal(g, np.ones(len(x)))
    hw = q.hardware()
    assert (hw.kind, hw.exponents) == ("po2", (-4, 3)) and hw.type.signed and hw.type.contains(np.float64(y))
    q1 = qz.QuantizedPo2(4, max_value=1.0)  # no exponent sign bit: [-8, 7], capped at 1
    y, _ = fwd_grad(q1, [0.0, 3.0, -3.0, 2**-7.6])
    np.testing.assert_array_equal(y, [2**-8, 1.0, -1.0, 2**-8])
    assert q1.hardware().exponents == (-8, 0)
    y, _ = fwd_grad(qz.QuantizedPo2(4, log2_rounding="floor"), [3.0, 0.75])
    np.testing.assert_array_equal(y, [2.0, 0.5])
    y, _ = fwd_grad(qz.QuantizedPo2(4, quadratic_approximation=True), [3.0, 0.2])
    np.testing.assert_array_equal(y, [4.0, 0.25])  # even exponents: round(log2 sqrt(x)) * 2


def test_quantized_relu_po2(fwd_grad):
    q = qz.QuantizedReluPo2(3)  # exponents [-4, 3]; zero is not an output
    x = [-1.0, -0.0, 0.0, 0.3, 1.0, 100.0]
    y, g = fwd_grad(q, x)
    np.testing.assert_array_equal(y, [2**-4, 2**-4, 2**-4, 0.25, 1.0, 8.0])
    np.testing.assert_array_equal(g, [0, 0, 0, 1, 1, 1])
    hw = q.hardware()
    assert (hw.kind, hw.exponents, hw.type.signed) == ("po2", (-4, 3), False)
    y, g = fwd_grad(qz.QuantizedReluPo2(3, max_value=4.0), [4.0, 100.0])
    np.testing.assert_array_equal(y, [4.0, 4.0])
    np.testing.assert_array_equal(g, [1, 0])
    q = qz.QuantizedReluPo2(4, negative_slope=0.5)
    y, g = fwd_grad(q, [-1.0, -0.25, 0.0, 2.0])
    np.testing.assert_array_equal(y, [-0.5, -0.125, 2**-8, 2.0])
    np.testing.assert_array_equal(g, [0.5, 0.5, 0.5, 1])
    assert q.hardware().type.signed and q.hardware().type.contains(np.float64(y))


@pytest.mark.parametrize("name", ["binary", "ternary"])  # the po2 quantizers round stochastically (test_quantizers_stochastic)
def test_stochastic_rounding_not_offered_is_refused(name):
    with pytest.raises(ValueError, match="use_stochastic_rounding"):
        qz.get(f"{name}(use_stochastic_rounding=True)")


def test_no_silent_alpha_rewrite():
    for q in (qz.QuantizedBits(4, 0), qz.Binary(), qz.Ternary()):
        assert q.alpha is None and q.get_config()["alpha"] is None
        assert q.hardware().kind != "scaled"


def test_qkeras_outputs_lie_on_declared_grids():
    x = np.random.default_rng(1).normal(scale=2.0, size=(256, 4)).astype(np.float32)
    for q in (
        qz.QuantizedBits(5, 1),
        qz.QuantizedBits(6, 2, symmetric=True),
        qz.QuantizedRelu(4, 2),
        qz.QuantizedRelu(5, 1, negative_slope=0.125),
        qz.QuantizedRelu(4, 1, use_sigmoid=1),
        qz.QuantizedTanh(4),
        qz.QuantizedTanh(5, use_real_tanh=True),
        qz.Binary(),
        qz.Ternary(),
        qz.QuantizedPo2(5),
        qz.QuantizedReluPo2(4, negative_slope=0.25),
    ):
        y = keras.ops.convert_to_numpy(q(x)).astype(np.float64)
        assert q.hardware().type.contains(y), q
    for q in (qz.QuantizedBits(4, 0, alpha="auto_po2"), qz.Binary(alpha="auto_po2"), qz.Ternary(alpha="auto_po2")):
        hw = q.hardware(x)
        y = keras.ops.convert_to_numpy(q(x)).astype(np.float64)
        assert hw.type.contains(y / np.asarray(hw.scale)), q


def test_quantized_bits_stays_bit_exact_for_every_mode():
    for rounding, overflow in itertools.product(["RND_CONV", "TRN", "RND"], ["SAT", "SAT_SYM", "WRAP"]):
        q = qz.QuantizedBits(5, 1, rounding=rounding, overflow=overflow)
        x = (np.arange(-200, 200) / 37).astype(np.float32)
        y = keras.ops.convert_to_numpy(q(x)).astype(np.float64)
        np.testing.assert_array_equal(y, q.type.quantize(x.astype(np.float64)))


def test_kind_fixed_means_a_plain_conversion():
    """freeze may export a "fixed" quantizer as a cast: q(x) must equal type.quantize(x) everywhere."""
    x = np.concatenate([np.arange(-3000, 3000) / 512, [-0.0, 1e-30, 1e6, -1e6]]).astype(np.float32)
    fixed = [
        qz.QuantizedBits(5, 1),
        qz.QuantizedBits(4, 0, keep_negative=False),
        qz.QuantizedBits(6, 2, True),
        qz.QuantizedBits(5, 1, use_stochastic_rounding=True, seed=1),
        qz.QuantizedRelu(4, 1),
        qz.QuantizedRelu(6, 0),
        qz.QuantizedRelu(3, 2, use_stochastic_rounding=True, seed=1),
    ]
    for q in fixed:
        hw = q.hardware()
        assert hw.kind == "fixed", q
        y = keras.ops.convert_to_numpy(q(x)).astype(np.float64)
        np.testing.assert_array_equal(y, hw.type.quantize(x.astype(np.float64)), err_msg=repr(q))
    for q in (
        qz.QuantizedTanh(4, use_real_tanh=True),
        qz.QuantizedRelu(4, 1, use_sigmoid=1),
        qz.QuantizedRelu(4, 1, negative_slope=0.5),
    ):
        hw = q.hardware()
        y = keras.ops.convert_to_numpy(q(x)).astype(np.float64)
        assert hw.kind == "grid" and hw.type.contains(y) and not np.array_equal(y, hw.type.quantize(x.astype(np.float64)))
