"""larq quantizers and XNOR-Net: forward and gradient at the edges (zero, ties, thresholds,
clip bounds), exact wherever the arithmetic is exact."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import edgebnn
from edgebnn import forms
from edgebnn import quantizers as qz
from edgebnn.fixed import FixedType

f32 = np.float32


def test_ste_sign_clip_none_passes_every_gradient(fwd_grad):
    y, g = fwd_grad(qz.SteSign(clip_value=None), [-1e6, -0.0, 0.0, 1e6])
    np.testing.assert_array_equal(y, [-1, 1, 1, 1])
    np.testing.assert_array_equal(g, [1, 1, 1, 1])


def test_approx_sign(fwd_grad):
    x = [-1.5, -1.0, -0.75, -0.25, -0.0, 0.0, 0.25, 0.5, 1.0, 1.0000001]
    y, g = fwd_grad(qz.ApproxSign(), x)
    np.testing.assert_array_equal(y, [-1, -1, -1, -1, 1, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(g, [0, 0, 0.5, 1.5, 2, 2, 1.5, 1.0, 0, 0])  # 2 - 2|x| inside |x| <= 1


def test_swish_sign(fwd_grad):
    x = [-100.0, -0.5, -0.0, 0.0, 0.2, 100.0]
    y, g = fwd_grad(qz.SwishSign(), x)
    np.testing.assert_array_equal(y, [-1, -1, 1, 1, 1, 1])
    assert g[2] == g[3] == 5.0 and g[0] == 0.0 and g[5] == 0.0  # beta at 0, cosh overflows to 0 far out
    b = 5.0 * np.float64([-0.5, 0.2])
    ref = 5.0 * (2 - b * np.tanh(b / 2)) / (1 + np.cosh(b))
    np.testing.assert_allclose(g[[1, 4]], ref, rtol=2e-6)  # transcendental in float32: a few ulp
    _, g2 = fwd_grad(qz.SwishSign(beta=2.0), [0.0])
    assert g2[0] == 2.0


def test_magnitude_aware_sign_per_output_channel(fwd_grad):
    w = [[0.5, -3.0], [-1.5, 0.0]]  # mean |w| per column: 1.0 and 1.5 (exact)
    q = qz.MagnitudeAwareSign()
    y, g = fwd_grad(q, w)
    np.testing.assert_array_equal(y, [[1.0, -1.5], [-1.0, 1.5]])  # sign(0) = +1
    np.testing.assert_array_equal(g, [[1.0, 0.0], [0.0, 1.5]])  # scale * [|w| <= 1], scale held constant
    hw = q.hardware(np.float32(w))
    assert (hw.kind, hw.base, hw.type, hw.scale, hw.axis) == ("scaled", forms.Binary(), qz.INT2, (1.0, 1.5), -1)
    assert q.hardware().scale is None
    y1, _ = fwd_grad(q, [-2.0, 0.0, 0.5])  # larq: a 1-D tensor reduces over no axis, scale = |x|
    np.testing.assert_array_equal(y1, [-2.0, 0.0, 0.5])


def test_ste_heaviside_zero_maps_to_zero(fwd_grad):
    y, g = fwd_grad(qz.SteHeaviside(), [-1.5, -1.0, -0.0, 0.0, 1e-7, 1.0, 1.0000001])
    np.testing.assert_array_equal(y, [0, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 1, 1, 0])
    assert qz.SteHeaviside().hardware() == forms.Unipolar()
    assert qz.SteHeaviside().hardware().type == FixedType(1, 1, False, "RND_CONV", "SAT")


def test_ste_tern_threshold_ties_map_to_one(fwd_grad):
    t = f32(0.05)
    x = [-1.5, -t, np.nextafter(-t, f32(0)), -0.0, 0.0, np.nextafter(t, f32(0)), t, 1.0, 1.0000001]
    y, g = fwd_grad(qz.SteTern(), x)
    np.testing.assert_array_equal(y, [-1, -1, 0, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 1, 1, 1, 1, 0])
    y0, _ = fwd_grad(qz.SteTern(threshold_value=0.0), [-1e-30, 0.0, 1e-30])
    np.testing.assert_array_equal(y0, [-1, 0, 1])  # sign(sign(x) + sign(x)): zero stays zero
    assert qz.SteTern().hardware().kind == "ternary"


def test_ste_tern_twn_threshold(fwd_grad):
    x = np.float32([1.0, -1.0, 0.5, -0.5, 0.25, 0.0, -0.25, 0.0])
    delta = f32(0.7) * f32(np.abs(x).sum()) / f32(x.size)  # 0.7 * mean|x| = 0.30625
    q = qz.SteTern(ternary_weight_networks=True, clip_value=0.75)
    y, g = fwd_grad(q, x)
    np.testing.assert_array_equal(y, np.where(x >= delta, 1, np.where(x <= -delta, -1, 0)))
    np.testing.assert_array_equal(y, [1, -1, 1, -1, 0, 0, 0, 0])
    np.testing.assert_array_equal(g, [0, 0, 1, 1, 1, 1, 1, 1])
    assert float(q.threshold(x)) == delta


def test_dorefa_activations_round_half_to_even(fwd_grad):
    x = [-0.5, -0.0, 0.25, 0.5, 0.75, 1.0, 1.5]
    y, g = fwd_grad(qz.DoReFa(1), x)  # n = 1: 0.5 is a tie and goes to 0
    np.testing.assert_array_equal(y, [0, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 1, 1, 0])  # clip window [0, 1] inclusive
    y, _ = fwd_grad(qz.DoReFa(2), x)  # n = 3: 0.5 * 3 = 1.5 ties to 2
    np.testing.assert_array_equal(y, f32([0, 0, 1, 2, 2, 3, 3]) / f32(3))
    y, _ = fwd_grad(qz.DoReFa(3), [0.5, 1.5 / 7])
    assert y[0] == f32(4) / f32(7)
    assert qz.DoReFa(1).hardware().kind == "unipolar"
    hw = qz.DoReFa(3).hardware()
    assert (hw.kind, hw.type, hw.scale) == ("scaled", FixedType(3, 3, False, "RND_CONV", "SAT"), 1 / 7)


def _larq_dorefa(x, k):
    """larq's DoReFa activations, as its source computes them: ``tf.round(x * n) / n`` on the
    clipped float32 ``x`` (a float32 product, rounded half to even, a float32 quotient)."""
    n = 2**k - 1
    v = tf.clip_by_value(tf.constant(np.asarray(x, np.float32)), 0.0, 1.0)
    return (tf.round(v * n) / n).numpy()


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 8])
def test_dorefa_activations_are_larqs_at_ties(fwd_grad, k):
    """At every float32 next to a tie (j + 1/2) / n, larq's numbers: x = 0.16666667 with k = 2 is
    just above 1/6, but 3x rounds to exactly 0.5 in float32, which goes to 0 half to even."""
    n = 2**k - 1
    j = np.arange(-1, n + 2, dtype=np.float64)
    base = np.concatenate([(j + 0.5) / n, j / n]).astype(np.float32)
    x = [base]
    up, down = base, base
    for _ in range(8):
        up, down = np.nextafter(up, np.float32(2)), np.nextafter(down, np.float32(-2))
        x += [up, down]
    x = np.concatenate(x)
    y, g = fwd_grad(qz.DoReFa(k), x)
    np.testing.assert_array_equal(y, _larq_dorefa(x, k))
    flushed = np.where(np.abs(x) < np.finfo(np.float32).tiny, 0, x)  # TensorFlow's CPU kernels flush subnormals
    np.testing.assert_array_equal(g, ((flushed >= 0) & (flushed <= 1)).astype(np.float32))
    codes, n_ = qz.DoReFa(k).split(tf.constant(x))
    if k > 1:
        np.testing.assert_array_equal(qz.DoReFa(k).rescale(codes, n_).numpy(), y)


def test_dorefa_tie_that_the_real_product_is_not_on():
    x = [0.1666666716337204]
    assert _larq_dorefa(x, 2)[0] == 0.0
    assert keras.ops.convert_to_numpy(qz.DoReFa(2)(np.float32(x)))[0] == 0.0
    assert keras.ops.convert_to_numpy(qz.DoReFa(2, rounding="exact")(np.float32(x)))[0] == np.float32(1) / np.float32(3)
    assert qz.get("dorefa(2, rounding='exact')") == qz.DoReFa(2, rounding="exact")
    with pytest.raises(ValueError, match="rounding"):
        qz.DoReFa(2, rounding="up")
    with pytest.raises(ValueError, match="activations"):
        qz.DoReFa(2, mode="weights", rounding="exact")


def test_dorefa_weights(fwd_grad):
    x = np.float32([-2.0, -0.5, 0.0, 0.3, 2.0])
    q = qz.DoReFa(2, mode="weights")
    y, g = fwd_grad(q, x)
    th = tf.math.tanh(x).numpy()
    d = np.abs(th).max()
    xn = th / (f32(2) * d) + f32(0.5)
    ref = f32(2) * (np.round(xn * f32(3)) / f32(3)) - f32(1)  # np.round is half to even, as tf.round
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_allclose(g, (1 - th.astype(np.float64) ** 2) / d, rtol=1e-6)  # float32 op order
    y0, g0 = fwd_grad(q, [0.0, 0.0])  # all zero: divide_no_nan gives x' = 1/2, which rounds to 2/3
    np.testing.assert_array_equal(y0, [f32(2) * (f32(2) / f32(3)) - f32(1)] * 2)
    np.testing.assert_array_equal(g0, [0, 0])
    assert qz.DoReFa(1, "weights").hardware().kind == "binary"
    hw = q.hardware()
    assert (hw.kind, hw.type.width, hw.type.signed, hw.scale) == ("scaled", 3, True, 1 / 3)
    with pytest.raises(ValueError, match="mode"):
        qz.DoReFa(2, mode="kernel")


def test_noop_is_identity_without_hardware_form(fwd_grad):
    y, g = fwd_grad(qz.NoOp(precision=1), [-2.5, 0.0, 3.25])
    np.testing.assert_array_equal(y, [-2.5, 0.0, 3.25])
    np.testing.assert_array_equal(g, [1, 1, 1])
    assert qz.NoOp(1).precision == 1
    with pytest.raises(NotImplementedError, match="NoOp"):  # optimizers treat it as "no kind"
        qz.NoOp(1).hardware()
    with pytest.raises(ValueError, match="no hardware grid"):
        qz.NoOp(1).hardware()


W = [[0.5, -3.0], [-1.5, 0.0]]


def test_xnor_sign_scales(fwd_grad):
    y, g = fwd_grad(qz.XnorSign(), W)  # E per column: 1.0, 1.5
    np.testing.assert_array_equal(y, [[1.0, -1.5], [-1.0, 1.5]])
    np.testing.assert_array_equal(g, [[1.0, 0.0], [0.0, 1.5]])
    y, _ = fwd_grad(qz.XnorSign(per_channel=False), W)  # E = 5 / 4
    np.testing.assert_array_equal(y, [[1.25, -1.25], [-1.25, 1.25]])
    y, _ = fwd_grad(qz.XnorSign(po2=True), W)  # 1.0 -> 1, 1.5 -> 2 (log2 1.5 = 0.58)
    np.testing.assert_array_equal(y, [[1.0, -2.0], [-1.0, 2.0]])
    y, _ = fwd_grad(qz.XnorSign(per_channel=False, po2=True), W)  # 1.25 -> 1
    np.testing.assert_array_equal(y, [[1.0, -1.0], [-1.0, 1.0]])
    hw = qz.XnorSign(po2=True).hardware(np.float32(W))
    assert (hw.kind, hw.base, hw.scale, hw.axis) == ("scaled", forms.Binary(), (1.0, 2.0), -1)
    assert qz.XnorSign(per_channel=False).hardware(np.float32(W)).scale == 1.25


def test_xnor_sign_gradient_through_the_scale(fwd_grad):
    up = [[1.0, 2.0], [3.0, 4.0]]
    _, g = fwd_grad(qz.XnorSign(), W, upstream=up)
    np.testing.assert_array_equal(g, [[1.0, 0.0], [0.0, 6.0]])  # E g [|x| <= 1] only
    _, g = fwd_grad(qz.XnorSign(scale_gradient=True), W, upstream=up)
    # + sign(x_i)/N * sum_j g_j sign(x_j): column 0 sum = 1 - 3 = -2, column 1 sum = -2 + 4 = 2
    # (d|x|/dx = 0 at x = 0, so the zero weight gets no scale term)
    np.testing.assert_array_equal(g, [[0.0, -1.0], [1.0, 6.0]])
    _, g = fwd_grad(qz.XnorSign(po2=True, scale_gradient=True), W, upstream=up)  # po2 rounding is STE
    np.testing.assert_array_equal(g, [[0.0, -1.0], [1.0, 4.0 * 2.0]])


def test_outputs_lie_on_declared_grids():
    x = np.random.default_rng(0).normal(scale=1.5, size=(64, 8)).astype(np.float32)
    x[:4] = [[0.0] * 8, [-0.0] * 8, [0.5] * 8, [1.0] * 8]
    for q in (
        qz.SteSign(),
        qz.ApproxSign(),
        qz.SwishSign(),
        qz.SteHeaviside(),
        qz.SteTern(),
        qz.DoReFa(1),
        qz.DoReFa(1, "weights"),
        qz.SteTern(ternary_weight_networks=True),
    ):
        y = keras.ops.convert_to_numpy(q(x))
        hw = q.hardware()
        assert hw.type.contains(y), q
        allowed = {"binary": {-1, 1}, "unipolar": {0, 1}, "ternary": {-1, 0, 1}}[hw.kind]
        assert set(np.unique(y).tolist()) <= allowed, q
    for q in (qz.MagnitudeAwareSign(), qz.XnorSign(), qz.XnorSign(po2=True)):
        y = keras.ops.convert_to_numpy(q(x))
        s = np.asarray(q.hardware(x).scale, np.float32)
        np.testing.assert_array_equal(np.abs(y), np.broadcast_to(s, y.shape))


def test_ste_tern_twn_as_activation_with_an_unknown_batch_dimension():
    """Issue 8, D4: the TWN threshold uses the tensor's runtime size (it used the static shape,
    a TypeError on a None batch dimension). As an activation it is a batch statistic:
    0.7 * mean|x| over the whole batch tensor."""
    q = qz.SteTern(ternary_weight_networks=True)
    inp = keras.Input((4,))
    model = keras.Model(inp, edgebnn.layers.QuantActivation(q)(inp))
    # multiples of 1/32: every sum is exact, so the threshold is known exactly
    rows = f32(
        [
            [1.0, -0.5, 0.3125, 0.0],
            [0.125, -0.125, 0.375, -1.0],
            [0.5, 0.5, -0.25, 0.0],
            [2.0, 0.0, 0.0, -0.125],
            [0.25, -0.25, 0.75, 0.5],
            [0.0, 0.0, 0.0, 0.375],
            [-0.5, 1.5, 0.25, 0.125],
        ]
    )
    for x in (rows[:1], rows):  # batch sizes 1 and 7
        delta = f32(0.7) * f32(np.abs(x).sum()) / f32(x.size)
        want = np.where(x >= delta, 1, np.where(x <= -delta, -1, 0)).astype(f32)
        for jit in (True, False):
            model.compile(jit_compile=jit)
            np.testing.assert_array_equal(model.predict(x, batch_size=len(x), verbose=0), want)
        traced = tf.function(q.threshold, input_signature=[tf.TensorSpec([None, 4], tf.float32)])
        assert float(traced(tf.constant(x))) == float(delta)
    # the batch statistic is visible: row 0 alone and within the batch ternarize differently
    d1 = f32(0.7) * f32(np.abs(rows[:1]).sum()) / f32(4)
    d7 = f32(0.7) * f32(np.abs(rows).sum()) / f32(rows.size)
    assert d1 != d7 and (np.abs(rows[0]) >= d1).tolist() != (np.abs(rows[0]) >= d7).tolist()
