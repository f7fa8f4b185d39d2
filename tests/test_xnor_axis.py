"""XNOR-Net scales along any axis, and XNOR on chosen slices of a kernel (one scale per slice),
checked against a direct NumPy computation of the definition, forward and gradient.

Weights are multiples of 1/16 (and some exact zeros): every slice's sum of magnitudes is exact
in float32, so the mean is one correctly rounded division in Keras and in NumPy alike and the
comparisons are exact."""

import numpy as np
import pytest

from edgebnn import forms
from edgebnn import quantizers as qz

f32 = np.float32


def dyadic(rng, shape):
    """Random weights on the grid 1/16 in (-2, 2), about one in eight exactly 0."""
    return f32(rng.integers(-31, 32, size=shape) * (rng.random(shape) > 0.125) / 16.0)


def sign(w):
    return np.where(w >= 0, f32(1), f32(-1))  # sign(0) = +1


def slice_scales(w, axis):
    """E_k = mean |w| over the slice k of ``axis`` (float32, one rounding), kept to broadcast."""
    a = np.abs(w).astype(np.float64)
    axes = tuple(i for i in range(w.ndim) if i != axis % w.ndim)
    n = np.prod([w.shape[i] for i in axes])
    return f32(a.sum(axis=axes, keepdims=True)) / f32(n)


def po2(e):
    with np.errstate(divide="ignore"):
        return np.where(e > 0, f32(2.0) ** np.round(np.log2(e)), f32(0)).astype(f32)


SHAPES = [(5, 4), (3, 3, 4, 6), (2, 3, 5, 2), (4, 3, 2)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("use_po2", [False, True])
def test_one_scale_per_index_of_any_axis(fwd_grad, shape, use_po2):
    rng = np.random.default_rng(len(shape) * 10 + use_po2)
    w = dyadic(rng, shape)
    up = f32(rng.normal(size=shape))
    for axis in [*range(-len(shape), len(shape)), None]:
        q = qz.XnorSign(axis=axis, po2=use_po2, clip_value=None)
        e = slice_scales(w, axis) if axis is not None else f32(np.abs(w).astype(np.float64).sum()) / f32(w.size)
        e = po2(e) if use_po2 else e
        y, g = fwd_grad(q, w, upstream=up)
        np.testing.assert_array_equal(y, sign(w) * e)
        np.testing.assert_array_equal(g, up * e)  # identity STE times the constant scale
        hw = q.hardware(w)
        assert isinstance(hw, forms.Scaled) and hw.axis == axis
        assert np.array_equal(np.ravel(hw.scale), np.ravel(e))


def test_per_channel_spellings_are_axes():
    assert qz.XnorSign(per_channel=True) == qz.XnorSign() == qz.XnorSign(axis=-1)
    assert qz.XnorSign(per_channel=False) == qz.XnorSign(axis=None)
    assert qz.get("xnor_sign(axis=2)") == qz.XnorSign(axis=2)
    assert repr(qz.XnorSign(axis=2, clip_value=None)) == "xnor_sign(clip_value=None, axis=2)"
    assert qz.XnorSign.from_config({"per_channel": False, "po2": True, "clip_value": 1.0, "scale_gradient": False}).axis is None
    with pytest.raises(ValueError, match="one scale per tensor and one per index"):
        qz.XnorSign(per_channel=False, axis=2)
    with pytest.raises(ValueError, match="axis must be an integer"):
        qz.XnorSign(axis="2")


def test_the_window_and_the_scale_gradient_follow_the_slices(fwd_grad):
    rng = np.random.default_rng(7)
    w = f32(rng.integers(-40, 41, size=(3, 2, 4, 3)) / 16.0)  # some |w| > 1: outside the window
    w[w == 0] = 0.5  # d|w|/dw at 0 is Keras's 0; the reference below uses sign(w) for it
    up = f32(rng.normal(size=w.shape))
    _, g = fwd_grad(qz.XnorSign(axis=2, scale_gradient=True), w, upstream=up)
    e = slice_scales(w, 2)
    n = w.size // w.shape[2]
    through_scale = np.sum(up * sign(w), axis=(0, 1, 3), keepdims=True) * np.sign(w) / n
    np.testing.assert_allclose(g, up * e * (np.abs(w) <= 1.0) + through_scale, rtol=1e-6, atol=1e-7)


def chosen_slices_reference(w, chosen, axis, other):
    """The slice-by-slice definition: each chosen slice sign(W_i) * mean|W_i|, the rest ``other``
    (None: unchanged; "bits4": quantized_bits(4, 0), round half to even on the grid 1/8)."""
    y = np.empty_like(w)
    for i in range(w.shape[axis]):
        s = np.take(w, [i], axis=axis)
        if i in chosen:
            part = sign(s) * f32(np.abs(s).astype(np.float64).sum()) / f32(s.size)
        elif other is None:
            part = s
        else:
            part = f32(np.clip(np.round(s * 8), -8, 7) / 8)
        idx = [slice(None)] * w.ndim
        idx[axis] = slice(i, i + 1)
        y[tuple(idx)] = part
    return y


def chosen_slices_gradient(w, chosen, axis, up):
    """d loss / dW: each chosen slice's constant scale times the upstream gradient, the rest 1."""
    y = up.copy()
    for i in chosen:
        s = np.take(w, [i], axis=axis)
        idx = [slice(None)] * w.ndim
        idx[axis] = slice(i, i + 1)
        y[tuple(idx)] = up[tuple(idx)] * (f32(np.abs(s).astype(np.float64).sum()) / f32(s.size))
    return y


@pytest.mark.parametrize("seed", range(12))
def test_xnor_on_chosen_input_channels_is_the_slice_by_slice_definition(fwd_grad, seed):
    rng = np.random.default_rng(100 + seed)
    rank = int(rng.choice([2, 3, 4]))
    shape = tuple(int(v) for v in rng.integers(1, 5, size=rank))
    axis = rank - 2  # a kernel's input channels: (C_in, C_out), (k, C_in, C_out), (kh, kw, C_in, C_out)
    shape = (*shape[:axis], int(rng.integers(2, 7)), *shape[axis + 1 :])
    n = shape[axis]
    chosen = sorted(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False).tolist())
    other = [None, "bits4"][seed % 2]
    q = qz.PartialQuantizer(
        qz.XnorSign(axis=axis, clip_value=None),
        channels=chosen,
        axis=axis,
        other=None if other is None else "quantized_bits(4, 0)",
    )
    w = dyadic(rng, shape)
    w[(0,) * rank] = 0.0  # a zero in a chosen slice: sign(0) = +1
    up = f32(rng.normal(size=shape))
    y, g = fwd_grad(q, w, upstream=up)
    np.testing.assert_array_equal(y, chosen_slices_reference(w, chosen, axis, other))
    np.testing.assert_array_equal(g, chosen_slices_gradient(w, chosen, axis, up))
    if chosen[0] == 0:
        assert y[(0,) * rank] > 0 or np.all(np.take(w, [0], axis=axis) == 0)


def test_the_string_form_of_the_issue_parses():
    q = qz.get("partial(xnor_sign(axis=2, clip_value=None), channels=[0, 2], axis=2, other=quantized_bits(4, 0))")
    assert q.quantizer == qz.XnorSign(axis=2, clip_value=None) and q.other == qz.get("quantized_bits(4, 0)")
    assert qz.get(repr(q)) == q
    with pytest.raises(ValueError, match="literals or quantizers"):
        qz.get("partial(xnor_sign(axis=os.sep), [0])")


def test_an_axis_beyond_the_kernel_is_refused_when_the_layer_is_built():
    import keras

    from edgebnn.layers import QuantConv2D, QuantDense

    with pytest.raises(ValueError, match=r"its kernel_quantizer xnor_sign\(axis=2\) scales along axis 2 but the kernel has 2"):
        keras.Sequential([keras.Input((4,)), QuantDense(3, kernel_quantizer="xnor_sign(axis=2)")])
    bad = "partial(xnor_sign(axis=2), [0], axis=2)"
    keras.Sequential([keras.Input((4, 4, 2)), QuantConv2D(3, 3, kernel_quantizer=bad)])  # fine on a 4-D kernel
    with pytest.raises(ValueError, match="chooses channels along axis 2 but the kernel has 2 axes"):
        keras.Sequential([keras.Input((4,)), QuantDense(3, kernel_quantizer=bad)])
