"""QKeras's layer names as QKeras users write them: ``QDense`` / ``QConv2D`` (``activation=`` a
quantizer, QKeras's initializer and constraint defaults) and ``QActivation(activation=...)``."""

import warnings

import keras
import numpy as np
import pytest

from edgebnn import verify
from edgebnn.constraints import WeightClip
from edgebnn.freeze import freeze
from edgebnn.layers import QActivation, QConv2D, QDense, QuantActivation, QuantDense, load_model

Q8 = "quantized_bits(8, 0, keep_negative=False)"
K4 = "quantized_bits(4, 0, alpha=1)"


def test_qdense_takes_qkeras_defaults_and_keeps_what_is_given():
    layer = QDense(4, kernel_quantizer="quantized_bits(4, 2)", bias_quantizer=K4)
    from edgebnn.layers import QKerasInitializer

    assert isinstance(layer.kernel_initializer, QKerasInitializer)  # QKeras's QInitializer around he_normal
    assert isinstance(layer.kernel_initializer.initializer, keras.initializers.HeNormal)
    assert isinstance(layer.kernel_constraint, WeightClip) and layer.kernel_constraint.clip_value == 3.5  # the grid's top
    assert layer.bias_constraint.clip_value == 1.0  # at least 1, as QKeras's Clip
    given = QDense(4, kernel_quantizer=K4, kernel_initializer="zeros", kernel_constraint=WeightClip(0.5))
    assert isinstance(given.kernel_initializer, keras.initializers.Zeros) and given.kernel_constraint.clip_value == 0.5
    assert QDense(4).kernel_constraint is None  # no quantizer, no clip


def test_an_activation_quantizer_applies_after_the_bias_and_a_keras_activation_stays_one():
    x = np.random.default_rng(0).normal(size=(32, 6)).astype(np.float32)
    q = QDense(5, kernel_quantizer=K4, bias_quantizer=K4, activation="quantized_relu(3)")
    q.build((None, 6))
    plain = QuantDense(5, kernel_quantizer=K4, bias_quantizer=K4)
    plain.build((None, 6))
    plain.set_weights(q.get_weights())
    expected = QuantActivation("quantized_relu(3)")(plain(x))
    np.testing.assert_array_equal(np.asarray(q(x)), np.asarray(expected))
    relu = QDense(5, kernel_quantizer=K4, activation="relu")
    assert relu.activation_quantizer is None and relu.activation is keras.activations.relu
    same = QuantActivation("quantized_relu(3, 1)").quantizer
    assert repr(QActivation(activation="quantized_relu(3, 1)").quantizer) == repr(same)


def _qkeras_mlp():
    return keras.Sequential(
        [
            keras.Input((16,)),
            QActivation(Q8),
            QDense(8, kernel_quantizer=K4, bias_quantizer=K4, activation="quantized_relu(3)"),
            QDense(6, kernel_quantizer=K4, bias_quantizer=K4, activation="relu"),
            keras.layers.BatchNormalization(),
            QActivation(activation="quantized_relu(3, 1)"),
            QDense(3, kernel_quantizer=K4, use_bias=False),
        ]
    )


def _qkeras_cnn():
    return keras.Sequential(
        [
            keras.Input((6, 6, 1)),
            QActivation(Q8),
            QConv2D(4, 3, kernel_quantizer="binary", activation="binary"),
            keras.layers.Flatten(),
            QDense(2, kernel_quantizer="binary", use_bias=False),
        ]
    )


@pytest.mark.parametrize(
    "make, ops",
    [
        (_qkeras_mlp, ["input", "dense", "cast", "dense", "threshold", "dense"]),
        (_qkeras_cnn, ["input", "conv2d", "threshold", "flatten", "dense"]),
    ],
)
def test_qkeras_style_models_freeze_exactly_and_survive_saving(make, ops, tmp_path):
    model = make()
    rng = np.random.default_rng(1)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            c = layer.gamma.shape
            layer.set_weights([rng.uniform(0.5, 2, c), rng.normal(size=c), rng.normal(size=c), rng.uniform(0.5, 2, c)])
    x = (np.floor(rng.uniform(0, 256, (200, *model.input_shape[1:]))) / 256).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model)
    assert [n.op for n in graph.nodes] == ops
    assert verify(model, graph, x).keras_vs_emulator == 0
    model.save(tmp_path / "m.keras")
    loaded = load_model(tmp_path / "m.keras")
    assert [type(l).__name__ for l in loaded.layers] == [type(l).__name__ for l in model.layers]
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_the_config_accepts_qkeras_names(tmp_path):
    from edgebnn.config import build_model, load_config

    path = tmp_path / "c.yaml"
    path.write_text(
        "model:\n"
        "  - QActivation: {activation: 'quantized_bits(5, 1, keep_negative=False)'}\n"
        "  - QDense: {units: 8, kernel_quantizer: 'quantized_bits(4, 0, alpha=1)', activation: 'quantized_relu(3)'}\n"
        "  - QDense: {units: 3, kernel_quantizer: ste_sign, use_bias: false}\n"
        "export: {reuse_factor: {q_dense_1: 2}}\n"
    )
    model = build_model(load_config(path), (64,))
    assert [l.name for l in model.layers][1:] == ["q_dense", "q_dense_1"]  # the names the reuse factors use
    assert repr(model.layers[1].activation_quantizer) == "quantized_relu(3)"


def _qbn_model():
    from edgebnn.layers import QBatchNormalization

    model = keras.Sequential(
        [
            keras.Input((16,)),
            QDense(8, kernel_quantizer="binary", use_bias=False),
            QBatchNormalization(name="qbn"),
            QActivation("binary"),
            QDense(4, kernel_quantizer="binary", use_bias=False),
        ]
    )
    rng = np.random.default_rng(3)
    c = (8,)
    model.get_layer("qbn").set_weights(
        [rng.uniform(0.3, 3, c), rng.normal(size=c), rng.normal(scale=2, size=c), rng.uniform(0.2, 5, c)]
    )
    return model


def test_qbatchnormalization_quantizes_its_parameters_as_qkeras_and_freezes_exactly(tmp_path):
    from edgebnn import quantizers

    model = _qbn_model()
    bn = model.get_layer("qbn")
    gamma, beta, mean, var = (np.asarray(keras.ops.convert_to_numpy(t)) for t in bn.inference_parameters())
    po2 = quantizers.get("quantized_po2(5)")
    # QKeras's defaults: powers of two (variance with even exponents)
    assert np.array_equal(gamma, keras.ops.convert_to_numpy(quantizers.get("quantized_relu_po2(6, 2048)")(bn.gamma)))
    assert np.array_equal(beta, keras.ops.convert_to_numpy(po2(bn.beta)))
    assert np.array_equal(mean, keras.ops.convert_to_numpy(po2(bn.moving_mean)))
    assert np.all(np.log2(var) % 2 == 0) and not np.array_equal(var, keras.ops.convert_to_numpy(bn.moving_variance))
    # inference is Keras's batch normalization of the quantized parameters
    x = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
    expected = keras.ops.batch_normalization(x, mean, var, axis=-1, offset=beta, scale=gamma, epsilon=bn.epsilon)
    assert np.array_equal(keras.ops.convert_to_numpy(bn(x, training=False)), keras.ops.convert_to_numpy(expected))
    # it saves, loads and freezes bit for bit
    model.save(tmp_path / "m.keras")
    loaded = load_model(tmp_path / "m.keras")
    assert loaded.get_layer("qbn").gamma_quantizer is not None
    data = (np.random.default_rng(1).integers(0, 17, size=(300, 16)) / 16).astype(np.float32)
    assert np.array_equal(model.predict(data, verbose=0), loaded.predict(data, verbose=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(loaded, input_type="ufixed<5,1>")
    report = verify(loaded, graph, data)
    assert report.keras_vs_emulator == 0, report.describe()


def test_qbatchnormalization_trains_with_quantized_batch_statistics():
    from edgebnn.layers import QBatchNormalization

    bn = QBatchNormalization(momentum=0.5, mean_quantizer=None, variance_quantizer=None, gamma_quantizer=None)
    x = np.random.default_rng(0).normal(loc=3.0, size=(256, 4)).astype(np.float32)
    y = keras.ops.convert_to_numpy(bn(x, training=True))
    # the batch is normalized with its own statistics, beta rounded to a power of two (0 stays tiny)
    assert abs(float(np.mean(y))) < 0.05
    assert np.allclose(keras.ops.convert_to_numpy(bn.moving_mean), 0.5 * x.mean(axis=0), atol=1e-5)  # unquantized


def test_qkeras_initializer_widens_draws_too_narrow_for_a_coarse_quantizer_as_qkeras_does():
    """he_normal over a wide ternary layer draws |w| < 0.5 almost everywhere: every weight
    ternarizes to 0 and every output is constant. QKeras's QInitializer (and the alias) widens
    the draws; a fine quantizer's draws stay as they are, clipped to its range."""
    from edgebnn import quantizers
    from edgebnn.layers import QKerasInitializer

    keras.utils.set_random_seed(0)
    shape = (3, 3, 64, 16)  # fan-in 576: he_normal's std 0.059
    plain = keras.initializers.HeNormal()(shape)
    ternary = quantizers.get("ternary")
    assert not np.any(keras.ops.convert_to_numpy(ternary(plain)))
    widened = QKerasInitializer("he_normal", "ternary")(shape)
    assert np.any(keras.ops.convert_to_numpy(ternary(widened)))
    assert float(np.std(keras.ops.convert_to_numpy(widened))) > 2 * float(np.std(keras.ops.convert_to_numpy(plain)))
    assert float(np.max(np.abs(keras.ops.convert_to_numpy(widened)))) <= 1.0
    fine = QKerasInitializer("he_normal", "quantized_bits(8, 0, alpha=1)")((64, 16))
    assert 0.1 < float(np.std(keras.ops.convert_to_numpy(fine))) < 0.25  # he_normal's 0.177, not widened
    # a given initializer is wrapped too; a given QKerasInitializer or a plain Keras one without scale is kept
    layer = QConv2D(4, 3, kernel_quantizer="binary", kernel_initializer="glorot_uniform")
    assert isinstance(layer.kernel_initializer, QKerasInitializer)
    assert isinstance(
        QConv2D(4, 3, kernel_quantizer="binary", kernel_initializer="zeros").kernel_initializer, keras.initializers.Zeros
    )
