"""Stochastic rounding (only with training=True, seeded, unbiased, on the grid), the partial
quantizer, and serialization of every quantizer."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import edgebnn  # noqa: F401
from edgebnn import forms
from edgebnn import quantizers as qz
from edgebnn.fixed import FixedType

f32 = np.float32
N = 20000  # draws per value


def np_(t):
    return keras.ops.convert_to_numpy(t)


@pytest.mark.parametrize(
    "q,plain",
    [
        (qz.QuantizedBits(4, 0, use_stochastic_rounding=True, seed=1), qz.QuantizedBits(4, 0)),
        (qz.QuantizedRelu(3, 1, use_stochastic_rounding=True, seed=2), qz.QuantizedRelu(3, 1)),
        (qz.QuantizedTanh(4, use_stochastic_rounding=True, seed=3), qz.QuantizedTanh(4)),
        (qz.QuantizedPo2(4, use_stochastic_rounding=True, seed=4), qz.QuantizedPo2(4)),
        (
            qz.QuantizedReluPo2(4, negative_slope=0.25, use_stochastic_rounding=True, seed=5),
            qz.QuantizedReluPo2(4, negative_slope=0.25),
        ),
    ],
)
def test_inference_is_deterministic_plain_rounding(q, plain):
    x = f32(np.concatenate([np.arange(-80, 80) / 32, np.arange(-80, 80) / 17]))  # ties included
    ref = np_(plain(x))
    for training in (None, False):
        np.testing.assert_array_equal(np_(q(x, training=training)), ref)
        np.testing.assert_array_equal(np_(q(x, training=training)), ref)


def _draws(q, values):
    x = np.repeat(f32(values)[None, :], N, axis=0)
    return x, np_(q(x, training=True))


def test_quantized_bits_stochastic_unbiased_on_grid():
    q = qz.QuantizedBits(4, 0, use_stochastic_rounding=True, seed=11)  # step 1/8, codes -8..7
    t = q.type
    values = [0.3, -0.3, 0.0625, -0.4375, 0.5, -0.375, 0.81, -0.99, 2.0, -3.0]
    x, y = _draws(q, values)
    assert t.contains(y.astype(np.float64))
    v = f32(values).astype(np.float64)
    lo = np.clip(np.floor(v / t.lsb) * t.lsb, t.min, t.max)
    hi = np.clip(np.ceil(v / t.lsb) * t.lsb, t.min, t.max)
    assert np.all((y == lo) | (y == hi))  # always a grid neighbour (saturated outside the range)
    # unbiased: E[y] = x inside the range. Each draw is lo + step * Bernoulli(p), so the mean of N
    # draws has standard deviation step * sqrt(p (1 - p) / N) <= step / (2 sqrt(N)); 6 sigma bounds
    # a false failure below 1e-8 per value (and the seed makes the run reproducible anyway).
    inside = (v >= t.min) & (v <= t.max)
    mean = y.mean(axis=0, dtype=np.float64)
    bound = 6 * t.lsb / (2 * np.sqrt(N))
    assert np.all(np.abs(mean - v)[inside] <= bound), (mean, v)
    np.testing.assert_array_equal(mean[~inside], np.clip(v, t.min, t.max)[~inside])
    # exact grid points never move; ties go either way
    assert np.all(y[:, 4] == 0.5) and np.all(y[:, 5] == -0.375)
    assert 0 < np.mean(y[:, 2] == 0.125) < 1
    # and it does round both ways
    assert 0 < np.mean(y[:, 0] == 0.25) < 1


def test_quantized_relu_stochastic_unbiased_on_grid():
    q = qz.QuantizedRelu(3, 1, use_stochastic_rounding=True, seed=5)  # ufixed<3,1>: step 0.25, max 1.75
    t = q.hardware().type
    values = [-0.7, 0.0, 0.1, 0.625, 1.3, 1.75, 1.8, 9.0]
    x, y = _draws(q, values)
    assert t.contains(y.astype(np.float64))
    mean = y.mean(axis=0, dtype=np.float64)
    v = f32(values).astype(np.float64)
    inside = (v >= 0) & (v <= t.max)
    assert np.all(np.abs(mean - v)[inside] <= 6 * t.lsb / (2 * np.sqrt(N)))
    np.testing.assert_array_equal(mean[~inside], np.clip(v, 0, t.max)[~inside])


def test_stochastic_gradient_is_the_estimator():
    q = qz.QuantizedRelu(3, 1, use_stochastic_rounding=True, seed=5)
    x = tf.constant(f32([-1.0, 0.3, 1.0, 3.0]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = q(x, training=True)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0, 1, 1, 0])
    q = qz.QuantizedBits(4, 0, use_stochastic_rounding=True, seed=5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = q(x, training=True)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1, 1, 1, 1])


@pytest.mark.parametrize(
    "q",
    [qz.QuantizedPo2(5, use_stochastic_rounding=True, seed=7), qz.QuantizedReluPo2(5, use_stochastic_rounding=True, seed=8)],
)
def test_po2_stochastic_rounding_is_unbiased_between_the_neighbouring_powers(q):
    values = [0.3, 0.7, 1.5, 0.0625, 3.0, 0.09]  # 0.0625 is a power of two: always itself
    x, y = _draws(q, values)
    for j, v in enumerate(values):
        lo = 2.0 ** np.floor(np.log2(v))
        assert set(np.unique(y[:, j])) <= {lo, 2 * lo}  # only the powers of two around it
        p_up = (v - lo) / lo
        assert abs(np.mean(y[:, j] == 2 * lo) - p_up) < 4 * np.sqrt(p_up * (1 - p_up) / N) + 1e-12, (v, np.mean(y[:, j]))
    assert q == qz.get(repr(q)) and qz.get(repr(q)).seed == q.seed


def test_seeded_through_keras_random():
    x = np.full((4096,), 0.3, np.float32)
    a = qz.QuantizedBits(4, 0, use_stochastic_rounding=True, seed=42)
    b = qz.get(keras.saving.serialize_keras_object(a))  # the seed is serialized
    assert b.seed == 42 and b == a
    first = np_(a(x, training=True))
    np.testing.assert_array_equal(np_(b(x, training=True)), first)  # same seed, same draws
    assert not np.array_equal(np_(a(x, training=True)), first)  # the generator advances
    assert isinstance(a._seed_generator, keras.random.SeedGenerator)

    @tf.function
    def step(v):
        return a(v, training=True)

    s1, s2 = np_(step(x)), np_(step(x))
    assert not np.array_equal(s1, s2)  # fresh draws inside a traced function too
    assert a.type.contains(s1.astype(np.float64))


# ----------------------------------------------------------------------------- partial


def test_partial_quantizer_chosen_channels():
    w = f32([[0.3, -0.6, 2.0, -0.05], [-1.5, 0.2, -0.0, 0.7]])
    q = qz.PartialQuantizer("ste_sign", channels=[2, 0])
    x = tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = q(x)
    np.testing.assert_array_equal(y.numpy(), f32([[1, -0.6, 1, -0.05], [-1, 0.2, 1, 0.7]]))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[1, 1, 0, 1], [0, 1, 1, 1]])
    hw = q.hardware()
    assert (hw.kind, hw.channels, hw.axis, hw.type) == ("partial", (0, 2), -1, None)
    assert hw.parts == (forms.Binary(), None)


def test_partial_quantizer_other_and_axis():
    w = f32([[0.3, -0.6, 2.0], [-1.5, 0.2, -0.0], [0.1, 0.124, 0.126]])
    q = qz.PartialQuantizer(qz.SteTern(0.25), channels=[1], axis=0, other="quantized_bits(4, 0)")
    y = np_(q(w))
    np.testing.assert_array_equal(y[1], [-1, 0, 0])  # row 1 ternary (threshold 0.25)
    np.testing.assert_array_equal(y[[0, 2]], np_(qz.QuantizedBits(4, 0)(w[[0, 2]])))  # the rest 4-bit
    hw = q.hardware(w)
    assert hw.parts[0].kind == "ternary" and hw.parts[1].kind == "fixed" and hw.axis == 0
    assert hw.type.contains(y.astype(np.float64))
    assert hw.type == FixedType(5, 2, True, "RND_CONV", "SAT")  # int<2> and fixed<4,1> on the 1/8 grid
    # per-tensor statistics are those of the chosen channels: XNOR's mean |x| of column 0 only
    y = np_(qz.PartialQuantizer(qz.XnorSign(per_channel=False), channels=[0])(f32([[1.0, 100.0], [-3.0, 7.0]])))
    np.testing.assert_array_equal(y, [[2.0, 100.0], [-2.0, 7.0]])
    hw = qz.PartialQuantizer("magnitude_aware_sign", [0]).hardware(f32([[1.0, 9.0], [-3.0, 7.0]]))
    assert hw.parts[0].scale == 2.0
    with pytest.raises(ValueError, match="out of range"):
        qz.PartialQuantizer("ste_sign", [5])(w)


# ----------------------------------------------------------------------- serialization

ALL = [
    qz.SteSign(0.5),
    qz.SteSign(None),
    qz.ApproxSign(),
    qz.SwishSign(2.0),
    qz.MagnitudeAwareSign(0.75),
    qz.SteHeaviside(None),
    qz.SteTern(0.1, True, 0.5),
    qz.DoReFa(3),
    qz.DoReFa(2, "weights"),
    qz.NoOp(1),
    qz.QuantizedBits(6, 2, symmetric=True, rounding="RND", overflow="WRAP"),
    qz.QuantizedBits(4, 1, alpha="auto_po2", scale_axis=0),
    qz.QuantizedBits(4, 0, alpha=[0.5, 0.25, 1.0, 2.0]),
    qz.QuantizedBits(5, 1, use_stochastic_rounding=True, seed=3),
    qz.QuantizedRelu(
        4,
        1,
        use_sigmoid=1,
        negative_slope=0.25,
        use_stochastic_rounding=True,
        seed=9,
        relu_upper_bound=3.0,
        is_quantized_clip=False,
    ),
    qz.QuantizedTanh(5, use_real_tanh=True),
    qz.Binary(True, "auto"),
    qz.Ternary(0.5, 0.2),
    qz.Ternary("auto_po2", number_of_unrolls=3),
    qz.QuantizedPo2(5, 2.0, quadratic_approximation=True),
    qz.QuantizedReluPo2(4, 1.0, 0.5, log2_rounding="floor"),
    qz.XnorSign(False, True, None, True),
    qz.PartialQuantizer("ste_sign", [3, 1], axis=0, other=qz.QuantizedBits(4, 0)),
]


@pytest.mark.parametrize("q", ALL, ids=lambda q: type(q).__name__)
def test_every_quantizer_round_trips(q):
    config = keras.saving.serialize_keras_object(q)
    back = keras.saving.deserialize_keras_object(config)
    assert back == q and back is not q and hash(back) == hash(q)
    assert qz.get(config) == q
    assert qz.get({"class": type(q).alias, **q.get_config()}) == q
    assert type(q).__name__ in config["registered_name"] and config["registered_name"].startswith("edgebnn>")
    x = np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)
    np.testing.assert_array_equal(np_(back(x)), np_(q(x)))


def test_every_alias_resolves():
    expect = {
        "ste_sign": qz.SteSign,
        "approx_sign": qz.ApproxSign,
        "swish_sign": qz.SwishSign,
        "magnitude_aware_sign": qz.MagnitudeAwareSign,
        "ste_heaviside": qz.SteHeaviside,
        "ste_tern": qz.SteTern,
        "dorefa_quantizer": qz.DoReFa,
        "dorefa": qz.DoReFa,
        "quantized_bits": qz.QuantizedBits,
        "quantized_relu": qz.QuantizedRelu,
        "quantized_tanh": qz.QuantizedTanh,
        "binary": qz.Binary,
        "ternary": qz.Ternary,
        "quantized_po2": qz.QuantizedPo2,
        "quantized_relu_po2": qz.QuantizedReluPo2,
        "xnor_sign": qz.XnorSign,
    }
    for alias, cls in expect.items():
        assert type(qz.get(alias)) is cls, alias
    assert qz.get("swish_sign").beta == 5.0 and qz.get("ste_tern").threshold_value == 0.05
    assert qz.get("dorefa").k_bit == 2 and qz.get("noop(2)") == qz.NoOp(2)
    assert qz.get("quantized_relu(4, 0)") == qz.QuantizedRelu(4, 0)
    assert qz.get("quantized_relu_po2(4, 1.0, 0.5)") == qz.QuantizedReluPo2(4, 1.0, 0.5)
    assert qz.get("dorefa_quantizer(k_bit=3, mode='weights')") == qz.DoReFa(3, "weights")
    assert qz.get("partial('ste_sign', [0, 2])") == qz.PartialQuantizer("ste_sign", [0, 2])
    assert qz.DoReFaQuantizer is qz.DoReFa and qz.NoOpQuantizer is qz.NoOp


def test_hardware_kinds_are_declared():
    for q in ALL:
        try:
            hw = q.hardware(np.ones((4, 4), np.float32))
        except qz.NoHardwareForm:
            assert isinstance(q, qz.NoOp)
            continue
        assert isinstance(hw, forms.FORMS), q
