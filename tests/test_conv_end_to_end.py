"""A binarized CNN from Keras to the C-simulation: Keras = emulator = C-sim, bit for bit."""

import warnings

import keras
import numpy as np
import pytest
from bn import randomize_bn
from graphs import PYNQ

import edgebnn  # noqa: F401
from edgebnn.backends.hls4ml import export
from edgebnn.freeze import freeze
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense
from edgebnn.verify import verify

pytestmark = pytest.mark.csim  # every test C-simulates its export


def bnn_cnn():
    keras.utils.set_random_seed(0)  # the kernels: the outputs' variety must not depend on test order
    model = keras.Sequential(
        [
            keras.Input((6, 6, 1)),
            QuantConv2D(
                4,
                3,
                padding="same",
                input_quantizer="quantized_bits(4, 0, keep_negative=False)",
                kernel_quantizer="ste_sign",
                use_bias=False,
            ),
            keras.layers.BatchNormalization(),
            QuantConv2D(3, 3, strides=2, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.Flatten(),
            QuantDense(5, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
            QuantActivation("quantized_bits(5, 3)"),
        ]
    )
    randomize_bn(model, np.random.default_rng(0), mean_scale=2.0)
    return model


@pytest.mark.parametrize("io_type", ["io_stream", "io_parallel"])
def test_cnn_keras_emulator_csim_identical(tmp_path, io_type):
    model = bnn_cnn()
    graph = freeze(model)
    assert [n.op for n in graph.nodes] == ["input", "conv2d", "threshold", "conv2d", "threshold", "flatten", "dense", "threshold"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        project = export(graph, tmp_path / "prj", board=PYNQ, io_type=io_type)
    x = np.random.default_rng(1).random((150, 6, 6, 1)).astype(np.float32)
    report = verify(model, graph, x, project=project)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
    assert len(np.unique(report.outputs["csim"], axis=0)) > 10


def pooled_bnn_cnn():
    """larq's order (conv -> BN -> MaxPool -> sign, pool moved after the quantizer) and a pool on a
    quantized tensor; non-overlapping windows so io_stream can pool too."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            QuantConv2D(
                4,
                3,
                padding="same",
                input_quantizer="quantized_bits(4, 0, keep_negative=False)",
                kernel_quantizer="ste_sign",
                use_bias=False,
            ),
            keras.layers.BatchNormalization(),
            keras.layers.MaxPooling2D(2),
            QuantConv2D(3, 3, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
            QuantActivation("ste_sign"),
            keras.layers.MaxPooling2D((1, 2)),
            keras.layers.Flatten(),
            QuantDense(5, kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
            QuantActivation("quantized_bits(5, 3)"),
        ]
    )
    randomize_bn(model, np.random.default_rng(2))
    return model


@pytest.mark.parametrize("io_type", ["io_stream", "io_parallel"])
def test_pooled_cnn_keras_emulator_csim_identical(tmp_path, io_type):
    model = pooled_bnn_cnn()
    graph = freeze(model)
    assert [n.op for n in graph.nodes] == [
        "input",
        "conv2d",
        "threshold",
        "maxpool2d",
        "conv2d",
        "threshold",
        "maxpool2d",
        "flatten",
        "dense",
        "threshold",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        project = export(graph, tmp_path / "prj", board=PYNQ, io_type=io_type)
    x = np.random.default_rng(1).random((150, 8, 8, 1)).astype(np.float32)
    report = verify(model, graph, x, project=project)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
    assert len(np.unique(report.outputs["csim"], axis=0)) > 3  # the outputs vary
