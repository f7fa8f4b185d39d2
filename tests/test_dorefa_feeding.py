"""DoReFa k-bit activations feeding a layer without an input quantizer (``layers.reads_codes``):
at inference the layer sums the integer codes and divides the sum by n = 2**k - 1 once, so its
output is the exact sum divided and rounded once to float32, whatever the order of the additions;
freeze deploys the codes and the thresholds replay that one rounding, ties included."""

import warnings

import keras
import numpy as np
import pytest

import edgebnn  # noqa: F401
from edgebnn.emulate import emulate
from edgebnn.fixed import FixedType
from edgebnn.freeze import freeze
from edgebnn.layers import QuantActivation, QuantConv1D, QuantConv2D, QuantDense, reads_codes

# integer weights -8..7: the sum of codes times weights is an integer
INT_W = "quantized_bits(4, 3)"
# the hardware input of a model that starts with a DoReFa activation: 1.0 saturates to 255/256, code n
IN_TYPE = "ufixed<8,0,RND,SAT>"


def feeding(weights, k=2, bias=None, order=None):
    """dorefa(k) -> QuantDense(1) with the integer ``weights`` (rows permuted by ``order``) and a
    float ``bias``; the model's input holds code / n in float32 (so DoReFa gives code / n back)."""
    w = np.asarray(weights, np.float32)[list(order) if order is not None else slice(None)]
    dense = QuantDense(1, kernel_quantizer=INT_W, use_bias=bias is not None, name="d")
    model = keras.Sequential([keras.Input((len(w),)), QuantActivation(f"dorefa({k})", name="a"), dense])
    dense.set_weights([w[:, None]] + ([np.array([bias], np.float32)] if bias is not None else []))
    return model


def exact(codes, weights, n):
    """float32(sum(codes * weights) / n), the exact quotient rounded once."""
    s = codes.astype(np.int64) @ np.asarray(weights, np.int64)
    return (s.astype(np.float64) / n).astype(np.float32)  # float64's quotient of an integer below 2**24 rounds as the real one


def test_the_layer_reads_the_codes_of_a_dorefa_activation_only():
    model = feeding([1, 2, 3])
    assert reads_codes(model.get_layer("d")) is model.get_layer("a").quantizer
    other = keras.Sequential([keras.Input((3,)), QuantActivation("quantized_relu(3)"), QuantDense(1, kernel_quantizer=INT_W)])
    assert reads_codes(other.layers[-1]) is None
    given = keras.Sequential([keras.Input((3,)), QuantActivation("dorefa(2)"), QuantDense(1, input_quantizer="dorefa(2)")])
    assert reads_codes(given.layers[-1]) is None  # its own input quantizer splits the codes
    through = keras.Sequential(
        [keras.Input((4, 2)), QuantActivation("dorefa(3)", name="a"), keras.layers.Flatten(), QuantDense(1, name="d")]
    )
    assert reads_codes(through.get_layer("d")) is through.get_layer("a").quantizer


@pytest.mark.parametrize("k", [2, 3, 4])
def test_the_output_is_the_exact_sum_divided_once_in_any_order(k):
    n = 2**k - 1
    rng = np.random.default_rng(k)
    weights = [7, -8, 5, 3, -1, 6, 2, -7]
    codes = rng.integers(0, n + 1, (2000, len(weights)))
    want = exact(codes, weights, n)
    plain = None
    for order in (range(8), [7, 6, 5, 4, 3, 2, 1, 0], [3, 0, 6, 1, 7, 2, 5, 4]):
        model = feeding(weights, k, order=order)
        x = (codes[:, list(order)] / n).astype(np.float32)
        assert np.array_equal(model.predict(x, verbose=0)[:, 0], want), order
        assert np.array_equal(np.asarray(model(x))[:, 0], want), order
        trained = np.asarray(model(x, training=True))[:, 0]  # training: the float32 sum of the values
        plain = trained if plain is None else plain
    assert not np.array_equal(plain, want)  # the plain float32 sum of the rounded quotients differs somewhere


def test_the_gradient_is_the_plain_layers():
    model = feeding([7, -8, 5], 2)
    x = keras.ops.convert_to_tensor(np.array([[1, 2, 0], [3, 1, 2]], np.float32) / 3)
    import tensorflow as tf

    with tf.GradientTape() as tape:
        tape.watch(x)
        y = model(x, training=True)
    g = tape.gradient(y, x).numpy()
    assert np.array_equal(g, np.tile(np.array([7, -8, 5], np.float32), (2, 1)))


# sums of codes times (1, 2, 4) for dorefa(2) (n = 3) at, next to and between the tie points of a
# threshold: the bias -(7/3 rounded) makes the output exactly 0 at S = 7 (sign 0 -> +1)
TIE_CODES = np.array([[1, 1, 1], [0, 1, 1], [3, 2, 0], [2, 0, 1], [1, 3, 0], [3, 0, 1], [0, 0, 2], [2, 1, 1], [3, 3, 3]])


def tie_model(bias):
    model = feeding([1, 2, 4], 2, bias=bias)
    model.add(QuantActivation("ste_sign", name="s"))
    return model


@pytest.mark.parametrize("step", [0, 1, -1])
def test_ties_of_the_quotient_freeze_exactly(step):
    """bias -(7/3 rounded) moved by ``step`` float32 steps: S = 7 lands on the threshold or next to it."""
    b = np.float32(-(np.float64(7) / 3))
    b = np.nextafter(b, np.float32(np.inf * step)) if step else b
    model = tie_model(float(b))
    s = TIE_CODES @ np.array([1, 2, 4])
    assert 7 in s and 6 in s and 8 in s
    want = np.where(exact(TIE_CODES, [1, 2, 4], 3) + b >= 0, 1.0, -1.0)
    assert want[s == 7][0] == (1.0 if step >= 0 else -1.0)
    x = (TIE_CODES / 3).astype(np.float32)
    assert np.array_equal(model.predict(x, verbose=0)[:, 0], want)
    graph = freeze(model, input_type=IN_TYPE)
    assert np.array_equal(emulate(graph, x)[:, 0], want)


def dorefa_model():
    """DoReFa activations (k = 2, 3, 4) feeding a conv2d, a conv1d (through a Reshape) and a dense
    layer (through a Flatten), each without an input quantizer, BatchNorm after each."""
    keras.utils.set_random_seed(5)
    model = keras.Sequential(
        [
            keras.Input((5, 5, 2)),
            QuantConv2D(3, 3, padding="same", input_quantizer="quantized_bits(4, 1)", kernel_quantizer="ste_sign"),
            keras.layers.BatchNormalization(),
            QuantActivation("dorefa(2)"),
            QuantConv2D(4, 3, padding="same", kernel_quantizer="quantized_bits(3, 1)", name="conv2d"),
            keras.layers.BatchNormalization(),
            QuantActivation("dorefa(3)"),
            keras.layers.Reshape((25, 4)),
            QuantConv1D(3, 3, kernel_quantizer="ternary", name="conv1d"),
            keras.layers.BatchNormalization(),
            QuantActivation("dorefa(4)"),
            keras.layers.Flatten(),
            QuantDense(4, kernel_quantizer="quantized_bits(4, 2)", name="dense"),
            keras.layers.BatchNormalization(),
            QuantActivation("quantized_bits(5, 3)"),
        ]
    )
    from bn import randomize_bn

    randomize_bn(model, np.random.default_rng(5), mean_scale=0.5)
    x = np.random.default_rng(6).uniform(-2.5, 2.5, (300, 5, 5, 2)).astype(np.float32)
    return model, x


def test_dorefa_activations_feeding_every_layer_kind_are_exact():
    from edgebnn.verify import verify

    model, x = dorefa_model()
    assert all(reads_codes(model.get_layer(name)) is not None for name in ("conv2d", "conv1d", "dense"))
    graph = freeze(model)
    assert graph.meta["keras_float32_exact"]
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    assert len(np.unique(report.outputs["keras"], axis=0)) > 20


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_dorefa_activations_feeding_a_layer_c_simulate_bit_for_bit(tmp_path, io_type):
    from graphs import csim_verified

    model, x = dorefa_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = csim_verified(model, freeze(model), x, tmp_path / "prj", io_type)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
    ties = tie_model(float(np.float32(-(np.float64(7) / 3))))
    t = FixedType.from_string(IN_TYPE).quantize(TIE_CODES / 3).astype(np.float32)  # on the input's grid: the same codes
    report = csim_verified(ties, freeze(ties, input_type=IN_TYPE), t, tmp_path / "ties", io_type)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
    assert np.array_equal(report.outputs["keras"][:, 0], np.where(TIE_CODES @ np.array([1, 2, 4]) >= 7, 1.0, -1.0))


def test_through_a_max_pool_and_dropout_the_layer_reads_the_codes():
    from edgebnn.verify import verify

    keras.utils.set_random_seed(7)
    model = keras.Sequential(
        [
            keras.Input((6, 6, 2)),
            QuantConv2D(3, 3, padding="same", input_quantizer="quantized_bits(4, 1)", kernel_quantizer="ste_sign"),
            keras.layers.BatchNormalization(),
            QuantActivation("dorefa(3)", name="a"),
            keras.layers.MaxPooling2D(),
            keras.layers.Dropout(0.5),
            QuantConv2D(4, 2, kernel_quantizer="quantized_bits(3, 1)", name="c"),
            keras.layers.BatchNormalization(),
            QuantActivation("quantized_bits(5, 3)"),
        ]
    )
    from bn import randomize_bn

    randomize_bn(model, np.random.default_rng(7), mean_scale=0.5)
    assert reads_codes(model.get_layer("c")) is model.get_layer("a").quantizer
    x = np.random.default_rng(8).uniform(-2.5, 2.5, (300, 6, 6, 2)).astype(np.float32)
    report = verify(model, freeze(model), x)
    assert report.keras_vs_emulator == 0, report.describe()
    assert len(np.unique(report.outputs["keras"], axis=0)) > 20
