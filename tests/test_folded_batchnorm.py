"""QKeras's QDenseBatchnorm and QConv2DBatchnorm: a BatchNormalization folded into the kernel and
bias before they are quantized, computed as QKeras computes it (inference and both folding modes
in training), frozen bit for bit, saved and loaded, and written in a run config."""

import warnings

import keras
import numpy as np
import pytest

from edgebnn import quantizers as qz
from edgebnn.emulate import emulate
from edgebnn.freeze import freeze
from edgebnn.layers import QActivation, QConv2DBatchnorm, QDenseBatchnorm, load_model

KQ, BQ = "quantized_bits(4, 0, alpha=1)", "quantized_bits(8, 3, alpha=1)"


def _stats(layer, rng, centre=0.0):
    c = layer.moving_mean.shape[0]
    layer.gamma.assign(rng.choice([1.0, -0.5, 2.0, 0.37], c))
    layer.beta.assign(rng.normal(size=c) * 0.5 + centre)
    layer.moving_mean.assign(rng.normal(size=c))
    layer.moving_variance.assign(rng.uniform(0.2, 3.0, c))


def _inv(layer):
    return np.asarray(layer.gamma) / np.sqrt(np.asarray(layer.moving_variance) + np.float32(layer.epsilon))


def test_inference_is_the_quantized_folded_layer():
    rng = np.random.default_rng(0)
    layer = QDenseBatchnorm(5, kernel_quantizer=KQ, bias_quantizer=BQ)
    x = rng.normal(size=(16, 7)).astype(np.float32)
    layer(x)
    layer.kernel.assign(rng.normal(size=(7, 5)) * 0.5)
    layer.bias.assign(rng.normal(size=5))
    _stats(layer, rng)
    inv = keras.ops.convert_to_tensor(_inv(layer).astype(np.float32))
    w = qz.get(KQ)(keras.ops.convert_to_tensor(layer.kernel) * inv)
    b = qz.get(BQ)(inv * (keras.ops.convert_to_tensor(layer.bias) - layer.moving_mean) + layer.beta)
    want = keras.ops.matmul(x, w) + b
    np.testing.assert_array_equal(np.asarray(layer(x)), np.asarray(want))
    assert np.all(np.asarray(w) * 8 == np.round(np.asarray(w) * 8))  # the folded kernel is on the 4-bit grid


@pytest.mark.parametrize("mode", ["ema_stats_folding", "batch_stats_folding"])
def test_training_folds_as_qkeras_and_moves_the_statistics(mode):
    rng = np.random.default_rng(1)
    layer = QDenseBatchnorm(4, kernel_quantizer=KQ, momentum=0.9, folding_mode=mode)
    x = rng.normal(size=(32, 6)).astype(np.float32)
    layer(x)
    layer.kernel.assign(rng.normal(size=(6, 4)) * 0.5)
    _stats(layer, rng)
    mm, mv = np.asarray(layer.moving_mean).copy(), np.asarray(layer.moving_variance).copy()
    raw = x @ np.asarray(layer.kernel) + np.asarray(layer.bias)
    mean, var = raw.mean(0), raw.var(0)
    y = np.asarray(layer(x, training=True))
    np.testing.assert_allclose(np.asarray(layer.moving_mean), mm * 0.9 + mean * 0.1, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(layer.moving_variance), mv * 0.9 + var * 0.1, rtol=1e-5)
    g, beta, eps = np.asarray(layer.gamma), np.asarray(layer.beta), layer.epsilon
    new_mv = np.asarray(layer.moving_variance)
    batch_inv = g / np.sqrt(var + eps)
    if mode == "batch_stats_folding":  # everything from the batch
        w = np.asarray(qz.get(KQ)(np.asarray(layer.kernel) * batch_inv.astype(np.float32)))
        want = x @ w + batch_inv * (0 - mean) + beta
    else:  # the kernel from the moving statistics, corrected to the batch's; the bias from the batch
        w = np.asarray(qz.get(KQ)(np.asarray(layer.kernel) * (g / np.sqrt(new_mv + eps)).astype(np.float32)))
        want = (x @ w) * np.sqrt(new_mv + eps) / np.sqrt(var + eps) + batch_inv * (0 - mean) + beta
    np.testing.assert_allclose(y, want, rtol=2e-5, atol=2e-5)  # float32 training arithmetic, not a deployed result
    assert int(layer.iteration.numpy()) == 1


def test_statistics_stop_moving_after_ema_freeze_delay():
    layer = QDenseBatchnorm(3, kernel_quantizer=KQ, ema_freeze_delay=1)
    x = np.random.default_rng(2).normal(size=(8, 4)).astype(np.float32)
    layer(x)
    for _ in range(2):  # iterations 0 and 1 update
        layer(x, training=True)
    frozen = np.asarray(layer.moving_mean).copy()
    layer(x * 3 + 1, training=True)
    np.testing.assert_array_equal(np.asarray(layer.moving_mean), frozen)


def _model(seed=0):
    rng = np.random.default_rng(seed)
    model = keras.Sequential(
        [
            keras.Input((6, 6, 1)),
            QActivation("quantized_bits(5, 0, keep_negative=False)"),
            QConv2DBatchnorm(4, 3, kernel_quantizer=KQ, bias_quantizer=BQ, activation="quantized_relu(3)", name="c"),
            keras.layers.Flatten(),
            QDenseBatchnorm(5, kernel_quantizer="ste_sign", use_bias=False, name="d"),
            QActivation("quantized_bits(6, 3)"),
        ]
    )
    for name in ("c", "d"):
        layer = model.get_layer(name)
        layer.kernel.assign(rng.normal(size=layer.kernel.shape) * 0.6)
        _stats(layer, rng, centre=0.5 if name == "c" else 0.0)  # the relu passes some values
    x = np.random.default_rng(seed + 1).random((64, 6, 6, 1)).astype(np.float32)
    acc = keras.Model(model.inputs, model.get_layer("c").output).predict(x, verbose=0)
    assert acc.max() > 0
    return model


def test_fused_models_freeze_exactly_and_survive_saving(tmp_path):
    model = _model()
    x = np.random.default_rng(3).random((300, 6, 6, 1)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model)
    assert [n.op for n in graph.nodes] == ["input", "conv2d", "cast", "flatten", "dense", "threshold"]
    keras_out = model.predict(x, verbose=0)
    assert np.array_equal(emulate(graph, x), keras_out) and len(np.unique(keras_out, axis=0)) > 10
    assert not np.any(np.asarray(model.get_layer("d").bias))  # use_bias=False: the folded bias has no latent part
    model.save(tmp_path / "m.keras")
    loaded = load_model(tmp_path / "m.keras")
    assert np.array_equal(loaded.predict(x, verbose=0), keras_out)
    assert int(loaded.get_layer("c").iteration.numpy()) == 0


def test_refusals_and_the_config(tmp_path):
    from edgebnn.config import build_model, load_config

    with pytest.raises(ValueError, match="folding_mode must be"):
        QDenseBatchnorm(3, folding_mode="fold_it")
    with pytest.raises(ValueError, match="renorm"):
        QDenseBatchnorm(3, renorm=True)
    path = tmp_path / "c.yaml"
    path.write_text(
        "model:\n  - QActivation: {activation: 'quantized_bits(5, 0, keep_negative=False)'}\n"
        f"  - QDenseBatchnorm: {{units: 4, kernel_quantizer: '{KQ}', momentum: 0.9, ema_freeze_delay: 100}}\n"
    )
    model = build_model(load_config(path), (6,))
    layer = model.layers[-1]
    assert isinstance(layer, QDenseBatchnorm) and (layer.momentum, layer.ema_freeze_delay) == (0.9, 100)
