import itertools

import keras
import numpy as np
import pytest

import edgebnn
from edgebnn import quantizers as qz
from edgebnn.fixed import OVERFLOW_MODES, ROUNDING_MODES, FixedType


def test_ste_sign_zero_is_plus_one_and_window_inclusive(fwd_grad):
    y, g = fwd_grad(qz.SteSign(), [-2.0, -1.0, -1e-7, -0.0, 0.0, 1e-7, 1.0, 1.0000001, 3.0])
    np.testing.assert_array_equal(y, [-1, -1, -1, 1, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 1, 1, 1, 0, 0])


def test_ste_sign_clip_value(fwd_grad):
    y, g = fwd_grad(qz.SteSign(clip_value=0.5), [-0.75, -0.5, 0.25, 0.5, 0.5000001])
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 0])


def test_quantized_bits_qkeras_numbers(fwd_grad):
    # quantized_bits(4, 1): step 2**(1-4+1) = 0.25, codes -8..7 -> values -2..1.75
    q = qz.QuantizedBits(4, 1)
    y, g = fwd_grad(q, [0.125, 0.375, -0.125, -0.375, 1.8, 5.0, -2.1, -9.0, 0.3])
    np.testing.assert_array_equal(y, [0.0, 0.5, 0.0, -0.5, 1.75, 1.75, -2.0, -2.0, 0.25])
    np.testing.assert_array_equal(g, np.ones(9))  # gradient 1 everywhere, even when clipped
    assert q.hardware().type == FixedType(4, 2, True, "RND_CONV", "SAT")


def test_quantized_bits_unsigned_and_symmetric(fwd_grad):
    y, _ = fwd_grad(qz.QuantizedBits(8, 0, keep_negative=False), [-0.5, 1.0, 0.5 / 256, 1.5 / 256])
    np.testing.assert_array_equal(y, [0.0, 255 / 256, 0.0, 2 / 256])
    y, _ = fwd_grad(qz.QuantizedBits(3, 0, symmetric=True), [-5.0, 5.0])
    np.testing.assert_array_equal(y, [-0.75, 0.75])


@pytest.mark.parametrize("rounding,overflow", list(itertools.product(ROUNDING_MODES, OVERFLOW_MODES)))
def test_keras_rounding_agrees_with_fixed_type(rounding, overflow):
    """The training-side quantization and the fixed-point core are one semantics."""
    for t in (
        FixedType(5, 2, True, rounding, overflow),
        FixedType(4, 1, False, rounding, overflow),
        FixedType(6, -1, True, rounding, overflow),
        FixedType(1, 0, True, rounding, overflow),
        FixedType(1, 1, False, rounding, overflow),
        FixedType(12, 9, True, rounding, overflow),
    ):
        codes = np.arange(-300, 300)
        x = np.concatenate([codes * t.lsb / 2, codes * t.lsb / 4, [-0.0, 0.0]]).astype(np.float32)
        got = keras.ops.convert_to_numpy(qz.fixed_quantize(x, t))
        np.testing.assert_array_equal(got.astype(np.float64), t.quantize(x.astype(np.float64)))


def test_aliases_and_call_strings():
    assert qz.get("ste_sign") == qz.SteSign()
    assert qz.get("quantized_bits(8, 0, keep_negative=False)") == qz.QuantizedBits(8, 0, keep_negative=False)
    assert qz.get({"class": "quantized_bits", "bits": 4}) == qz.QuantizedBits(4)
    with pytest.raises(ValueError, match="unknown quantizer 'ste_sgn'"):
        qz.get("ste_sgn")
    with pytest.raises(ValueError, match="literals"):
        qz.get("quantized_bits(__import__('os'))")
    with pytest.raises(ValueError, match="alpha"):
        qz.QuantizedBits(8, 0, alpha="autom")


def test_repr_is_the_short_string_a_user_writes_and_reads_back():
    import numpy as np

    from edgebnn import fuzz

    assert repr(qz.get("ste_sign")) == "ste_sign"
    assert repr(qz.QuantizedBits(4, 1, rounding="RND_INF")) == "quantized_bits(4, 1, rounding='RND_INF')"
    nested = qz.get("partial('ste_sign', [0], other='quantized_bits(4, 1, overflow=\\'SAT\\')')")
    assert repr(nested) == "partial('ste_sign', [0], other=\"quantized_bits(4, 1, overflow='SAT')\")"
    rng = np.random.default_rng(0)
    strings = [
        make(rng, *args)
        for _ in range(200)
        for make, args in ((fuzz._fixed_quantizer, ()), (fuzz._activation_quantizer, (4,)), (fuzz._kernel_quantizer, ()))
    ]
    for q in map(qz.get, strings):
        assert qz.get(repr(q)) == q and len(repr(q)) < 160, repr(q)


def test_quantizers_serialize():
    for q in (qz.SteSign(0.5), qz.QuantizedBits(6, 2, symmetric=True, rounding="RND", overflow="WRAP")):
        back = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(q))
        assert back == q and back is not q


@pytest.mark.parametrize(
    "q",
    [
        qz.SteTern(ternary_weight_networks=True),
        qz.XnorSign(),
        qz.XnorSign(per_channel=False, po2=True),
        qz.MagnitudeAwareSign(),
        qz.Ternary(alpha="auto"),
        qz.Ternary(alpha="auto_po2"),
        qz.Binary(alpha="auto_po2"),
        qz.QuantizedBits(4, 1, alpha="auto"),
        qz.QuantizedBits(4, 1, alpha="auto_po2"),
        qz.DoReFa(2, "weights"),
        qz.DoReFa(2),
    ],
    ids=repr,
)
def test_tensor_statistics_work_with_an_unknown_batch_dimension(q, xla_allowed):
    """Quantizers whose scale or threshold is a statistic of the tensor, used as activations:
    Keras traces them with a None batch dimension and runs them at any batch size, under XLA too,
    to the same numbers (a mean is its exact quotient rounded once, whatever order XLA sums in)."""
    inp = keras.Input((3, 2))
    model = keras.Model(inp, edgebnn.layers.QuantActivation(q)(inp))
    rng = np.random.default_rng(0)
    for batch in (1, 7):
        x = rng.normal(size=(batch, 3, 2)).astype(np.float32)
        want = keras.ops.convert_to_numpy(q(x))
        for jit in (True, False):
            model.compile(jit_compile=jit)
            y = model.predict(x, batch_size=batch, verbose=0)
            np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize(
    "q",
    [
        "xnor_sign",
        "xnor_sign(axis=0)",
        "xnor_sign(axis=None)",
        "magnitude_aware_sign",
        "quantized_bits(3, 0, alpha='auto')",
        "quantized_bits(3, 0, alpha='auto', scale_axis=0)",
        "binary(alpha='auto')",
        "ternary(alpha='auto')",
    ],
)
def test_a_kernel_scale_is_one_number_eager_and_under_xla(q, xla_allowed):
    """A scale that is a mean (XNOR's mean |W|, Bi-Real's per channel, QKeras's alphas) over a
    count that is not a power of two: XLA multiplied by 1/N where eager TensorFlow divided by N
    (and summed in another order), so a layer's scales, its sums and model.predict under
    jit_compile differed from eager Keras and from the graph frozen from the eager kernel."""
    import tensorflow as tf

    quantizer = qz.get(q)
    compiled = tf.function(lambda w: quantizer(w), jit_compile=True)
    rng = np.random.default_rng(3)
    for shape in [(7, 6), (3, 5, 12), (3, 3, 6, 10)]:
        for _ in range(4):
            w = rng.normal(size=shape).astype(np.float32)
            eager = keras.ops.convert_to_numpy(quantizer(w))
            np.testing.assert_array_equal(np.asarray(compiled(w)), eager)
