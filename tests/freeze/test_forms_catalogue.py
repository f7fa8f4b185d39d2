"""Every hardware form of the quantizer catalogue, as weights and as activations: one small model
each, Keras = emulator bit for bit on edge inputs, or the exact one-sentence refusal; a few
representative ones C-simulated in one compiled project per io type."""

import re
import warnings

import keras
import numpy as np
import pytest
from bn import adversarial_bn, batch_norms
from graphs import PYNQ, edge_inputs

from edgebnn.emulate import emulate
from edgebnn.freeze import FreezeError, freeze
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense, reads_codes, sums_exactly

IN_Q = "quantized_bits(4, 1)"

WEIGHTS = [
    "ste_sign",
    "binary",
    "ste_heaviside",
    "ste_tern",
    "ternary",
    "ste_tern(ternary_weight_networks=True)",
    "quantized_po2(4)",
    "quantized_bits(3, 0)",
    "partial('ste_sign', [0, 2], other='quantized_bits(3, 0)')",
    "partial('ste_sign', [1], other='quantized_po2(3)')",
    # scaled: codes in the MACs, the scale folded into the next thresholds (or shifted into the codes)
    "xnor_sign",
    "xnor_sign(per_channel=False)",
    "xnor_sign(po2=True)",
    "magnitude_aware_sign",
    "quantized_bits(4, 1, alpha='auto')",
    "quantized_bits(4, 1, alpha='auto_po2')",
    "quantized_bits(4, 1, alpha=0.375)",
    "quantized_bits(3, 0, alpha=[0.5, 1.5, 0.25, 3.0, 1.0])",
    "dorefa(2, 'weights')",
    "dorefa(3, 'weights')",
    "binary(alpha='auto')",
    "ternary(alpha='auto_po2')",
]

ACTIVATIONS = [
    "ste_sign",
    "approx_sign",
    "swish_sign",
    "ste_heaviside",
    "ste_tern(threshold_value=0.5)",
    "ternary",
    "binary(use_01=True)",
    "quantized_bits(3, 1)",
    "quantized_relu(3, 1)",
    "quantized_relu(4, 2, negative_slope=0.25)",
    "quantized_relu(3, 1, relu_upper_bound=1.5)",
    "quantized_tanh(3)",
    "binary_tanh",  # QKeras: -1 at 0
    "quantized_sigmoid(3)",
    "quantized_sigmoid(2, symmetric=True)",
    "quantized_po2(3)",
    "quantized_relu_po2(3)",
    "dorefa(1)",
    "dorefa(2)",
    "dorefa(3)",
    "quantized_bits(3, 1, alpha=0.75)",
]


def _finish(model, seed):
    """Random weights and adversarial BatchNormalization statistics."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, (QuantDense, QuantConv2D)):
            for w in layer.weights:
                w.assign(rng.normal(size=w.shape).astype(np.float32))
    for layer in batch_norms(model):
        c = layer.gamma.shape[0]
        gamma, beta, mean, var = adversarial_bn(c, rng, np.arange(-4, 5) * 0.5)
        gamma = np.resize(np.array([1.0, -0.7, 0.0, 2.5, -1.5], np.float32), c)  # both signs and zero, in every model
        layer.set_weights([gamma, beta, mean, np.maximum(var, np.float32(0.3))])
    return model


def weights_model(kq, seed=0):
    """Dense -> BN -> sign -> Dense -> BN -> 6-bit output, both kernels ``kq``."""
    return _finish(
        keras.Sequential(
            [
                keras.Input((6,)),
                QuantDense(5, input_quantizer=IN_Q, kernel_quantizer=kq, name="d1"),
                keras.layers.BatchNormalization(name="bn1"),
                QuantDense(5, input_quantizer="ste_sign", kernel_quantizer=kq, name="d2"),
                keras.layers.BatchNormalization(name="bn2"),
                QuantActivation("quantized_bits(6, 2)", name="out"),
            ]
        ),
        seed,
    )


def activation_model(aq, as_input: bool, seed=0):
    """Dense -> BN -> ``aq`` (a QuantActivation, or the next layer's input_quantizer) -> Dense ->
    8-bit output."""
    middle = [QuantActivation(aq, name="act")] if not as_input else []
    return _finish(
        keras.Sequential(
            [
                keras.Input((6,)),
                QuantDense(5, input_quantizer=IN_Q, kernel_quantizer="quantized_bits(3, 0)", name="d1"),
                keras.layers.BatchNormalization(name="bn1"),
                *middle,
                QuantDense(4, input_quantizer=aq if as_input else "quantized_bits(8, 4)", kernel_quantizer="ste_sign", name="d2"),
                QuantActivation("quantized_bits(8, 4)", name="out"),
            ]
        ),
        seed,
    )


def assert_keras_equals_emulator(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model)
    x = edge_inputs(graph, n=400).astype(np.float32)
    want = model.predict(x, verbose=0, batch_size=64)
    assert np.array_equal(emulate(graph, x), want)
    assert len(np.unique(want, axis=0)) > 3  # the edge inputs reach several outputs
    return graph


@pytest.mark.parametrize("kq", WEIGHTS)
def test_every_weight_form_deploys_bit_exactly(kq):
    graph = assert_keras_equals_emulator(weights_model(kq))
    assert [n.op for n in graph.nodes] == ["input", "dense", "threshold", "dense", "threshold"]


@pytest.mark.parametrize("aq", ACTIVATIONS)
@pytest.mark.parametrize("as_input", [False, True])
def test_every_activation_form_deploys_bit_exactly(aq, as_input):
    assert_keras_equals_emulator(activation_model(aq, as_input))


def test_scaled_conv_kernels_and_dorefa_inputs():
    model = _finish(
        keras.Sequential(
            [
                keras.Input((5, 5, 2)),
                QuantConv2D(3, 3, padding="same", input_quantizer=IN_Q, kernel_quantizer="xnor_sign", name="c1"),
                keras.layers.BatchNormalization(name="bn1"),
                QuantConv2D(4, 2, input_quantizer="dorefa(2)", kernel_quantizer="magnitude_aware_sign", name="c2"),
                keras.layers.Flatten(),
                QuantActivation("quantized_relu(3, 1)", name="a2"),
                QuantDense(3, input_quantizer="dorefa(3)", kernel_quantizer="dorefa(2, 'weights')", name="d"),
                QuantActivation("quantized_bits(8, 4)", name="out"),
            ]
        ),
        1,
    )
    assert_keras_equals_emulator(model)


def test_power_of_two_scale_ending_the_model_is_a_finer_grid():
    model = _finish(
        keras.Sequential(
            [
                keras.Input((6,)),
                QuantDense(4, input_quantizer=IN_Q, kernel_quantizer="xnor_sign(po2=True)", name="d1"),
                keras.layers.BatchNormalization(name="bn1"),
                QuantDense(
                    3, input_quantizer="ste_sign", kernel_quantizer="quantized_bits(4, 1, alpha='auto_po2')", use_bias=False
                ),
            ]
        ),
        2,
    )
    graph = assert_keras_equals_emulator(model)
    assert graph.nodes[-1].op == "dense"


def _refusal(model):
    with pytest.raises(FreezeError) as err:
        freeze(model)
    return str(err.value)


def test_scaled_kernel_ending_the_model_is_refused_with_the_fix():
    model = keras.Sequential(
        [
            keras.Input((6,)),
            QuantDense(3, input_quantizer=IN_Q, kernel_quantizer="magnitude_aware_sign", use_bias=False, name="d"),
        ]
    )
    model.layers[0].kernel.assign(np.full((6, 3), 0.75, np.float32) * np.array([1.0, -0.5, 0.3], np.float32))
    assert _refusal(model) == (
        "layer 'd' (QuantDense) multiplies its sums by its kernel scale (0.75, 0.375, 0.225), a scale that is not a power "
        "of two, and its real-valued products end the model, which hardware cannot reproduce exactly; add a quantizer "
        "after the layer (e.g. QuantActivation('quantized_bits(8, 3)')) so that freeze folds the scale into its thresholds"
    )


def test_dorefa_activation_ending_the_model_is_refused_with_the_fix():
    model = keras.Sequential(
        [
            keras.Input((6,)),
            QuantDense(3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="d"),
            QuantActivation("dorefa(2)", name="a"),
        ]
    )
    assert _refusal(model) == (
        "layer 'a' (QuantActivation) scales the codes of its quantizer dorefa, a scale that is not a power of "
        "two, and its real-valued products end the model, which hardware cannot reproduce exactly; add a quantizer after "
        "the layer (e.g. QuantActivation('quantized_bits(8, 3)')) so that freeze folds the scale into its thresholds"
    )


def test_dorefa_activation_into_a_layer_without_input_quantizer_deploys_its_codes():
    """The layer reads the codes back, sums them and divides once (``layers.reads_codes``), as with
    input_quantizer="dorefa(3)": Keras = emulator, the same outputs either way."""
    layers = [
        keras.Input((6,)),
        QuantDense(3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="d"),
        QuantActivation("dorefa(3)", name="a"),
        QuantDense(2, kernel_quantizer="ste_sign", name="d2"),
        QuantActivation("ste_sign"),
    ]
    model = keras.Sequential(layers)
    assert reads_codes(model.get_layer("d2")) is model.get_layer("a").quantizer
    fixed = keras.Sequential(
        [keras.Input((6,))]
        + [
            QuantDense.from_config({**layer.get_config(), "input_quantizer": "dorefa(3)"}) if layer.name == "d2" else layer
            for layer in model.layers
        ]
    )
    fixed.get_layer("d2").set_weights(model.get_layer("d2").get_weights())
    x = np.random.default_rng(0).normal(0, 2, size=(400, 6)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph, graph_fixed = freeze(model), freeze(fixed)
    assert np.array_equal(emulate(graph, x), np.asarray(model.predict(x, verbose=0), np.float64))
    assert np.array_equal(emulate(graph_fixed, x), emulate(graph, x))
    # d2 sums the activation's codes as they are (its own input quantizer would requantize them first)
    assert [n.op for n in graph.nodes] == ["input", "dense", "threshold", "dense", "threshold"]


def test_dorefa_activation_into_a_layer_padding_with_ones_is_refused_with_the_fix():
    model = keras.Sequential(
        [
            keras.Input((4, 4, 2)),
            QuantConv2D(3, 1, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="c"),
            QuantActivation("dorefa(3)", name="a"),
            QuantConv2D(2, 3, padding="same", pad_values=1.0, kernel_quantizer="ste_sign", name="c2"),
            QuantActivation("ste_sign"),
        ]
    )
    assert reads_codes(model.get_layer("c2")) is None
    assert _refusal(model) == (
        "layer 'c2' (QuantConv2D) sums the scaled outputs of layer 'a' (QuantActivation), whose float32 sum depends on the "
        "order of the additions, and pads them with pad_values=1.0, which is not a code; pad with 0.0 (the layer then "
        "sums the codes and applies the scale once after its sum)"
    )


@pytest.mark.parametrize(
    "quantizer, message",
    [
        ("dorefa(2, 'weights')", "takes its range from the maximum of each batch"),
        ("xnor_sign", "multiplies its outputs by a scale computed from the values of each batch"),
        ("quantized_bits(4, 0, alpha='auto')", "multiplies its outputs by a scale computed from the values of each batch"),
    ],
)
def test_activations_with_a_scale_from_the_batch_are_refused(quantizer, message):
    model = keras.Sequential(
        [
            keras.Input((6,)),
            QuantDense(3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="d"),
            QuantActivation(quantizer, name="a"),
            QuantDense(2, input_quantizer="ste_sign", kernel_quantizer="ste_sign"),
        ]
    )
    assert re.match(rf"layer 'a' \(QuantActivation\): its quantizer .*{re.escape(message)}", _refusal(model))


def test_a_scale_along_the_input_axis_deploys_as_powers_of_two_and_as_float32_scales():
    def model(alpha):
        kq = f"quantized_bits(4, 0, alpha={alpha!r}, scale_axis=0)"
        return keras.Sequential(
            [keras.Input((6,)), QuantDense(3, input_quantizer=IN_Q, kernel_quantizer=kq, name="d"), QuantActivation("ste_sign")]
        )

    x = np.random.default_rng(0).uniform(-2, 2, (200, 6)).astype(np.float32)
    for alpha in ("auto_po2", "auto"):  # "auto": the exact float64 sum rounded once (layers.sums_exactly)
        m = model(alpha)
        assert sums_exactly(m.get_layer("d")) == (alpha == "auto")
        graph = freeze(m)
        assert np.array_equal(emulate(graph, x), m.predict(x, verbose=0)), alpha


def csim_model():
    """Representative forms in one model: XNOR and DoReFa-weight convolutions on DoReFa inputs,
    a magnitude-aware dense, a partial kernel, a leaky bounded relu and a power-of-two activation."""
    return _finish(
        keras.Sequential(
            [
                keras.Input((5, 5, 2)),
                QuantConv2D(3, 3, padding="same", input_quantizer=IN_Q, kernel_quantizer="xnor_sign", name="c1"),
                keras.layers.BatchNormalization(name="bn1"),
                QuantConv2D(4, 2, input_quantizer="dorefa(2)", kernel_quantizer="dorefa(2, 'weights')", name="c2"),
                keras.layers.BatchNormalization(name="bn2"),
                QuantActivation("quantized_relu(4, 2, negative_slope=0.25)", name="a2"),
                keras.layers.Flatten(),
                QuantDense(6, input_quantizer=None, kernel_quantizer="magnitude_aware_sign", name="d1"),
                QuantActivation("quantized_relu_po2(3)", name="a3"),
                QuantDense(4, input_quantizer=None, kernel_quantizer="partial('ste_sign', [1], other='quantized_bits(3, 0)')"),
                QuantActivation("quantized_bits(8, 4)", name="out"),
            ]
        ),
        3,
    )


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_representative_forms_csim(tmp_path, io_type):
    from edgebnn.backends import hls4ml as hls
    from edgebnn.verify import verify

    model = csim_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model)
        project = hls.export(graph, tmp_path / "prj", board=PYNQ, io_type=io_type)
    x = edge_inputs(graph, n=200).astype(np.float32)
    report = verify(model, graph, x, project=project)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
    assert len(np.unique(report.outputs["csim"], axis=0)) > 10


def test_average_of_dorefa_outputs_is_refused():
    model = keras.Sequential(
        [
            keras.Input((4, 4, 1)),
            QuantConv2D(2, 1, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="c"),
            QuantActivation("dorefa(2)", name="a"),
            keras.layers.AveragePooling2D(2, name="avg"),
            QuantConv2D(2, 1, input_quantizer="ste_sign", kernel_quantizer="ste_sign"),
            QuantActivation("ste_sign"),
        ]
    )
    assert _refusal(model) == (
        "layer 'avg' (AveragePooling2D) averages the scaled outputs of layer 'a' (QuantActivation), whose float32 mean "
        "differs from the scaled mean of its codes; pool before that QuantActivation (on the accumulator) or use an "
        "unscaled quantizer there (e.g. quantized_relu)"
    )


def test_per_channel_activation_scale_is_refused():
    model = keras.Sequential(
        [
            keras.Input((6,)),
            QuantDense(3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="d"),
            QuantActivation("quantized_bits(3, 1, alpha=[0.5, 0.75, 1.0])", name="a"),
            QuantDense(2, input_quantizer="ste_sign", kernel_quantizer="ste_sign"),
        ]
    )
    assert _refusal(model).startswith(
        "layer 'a' (QuantActivation): its quantizer quantized_bits(3, 1, alpha=[0.5, 0.75, 1.0]) scales its codes by "
        "(0.5, 0.75, 1); as a QuantActivation freeze deploys only one positive scale per tensor"
    )


def test_scaled_inputs_the_layer_cannot_rescale_after_its_sum_are_refused():
    per_channel = keras.Sequential(
        [
            keras.Input((6,)),
            QuantDense(3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="d"),
            QuantDense(2, input_quantizer="quantized_bits(3, 1, alpha=[0.5, 0.75, 1.0])", kernel_quantizer="ste_sign", name="d2"),
            QuantActivation("ste_sign"),
        ]
    )
    assert _refusal(per_channel) == (
        "layer 'd2' (QuantDense): its input_quantizer quantized_bits(3, 1, alpha=[0.5, 0.75, 1.0]) scales each input "
        "channel differently, along the sum, so the scale cannot be applied after it; give the alpha as one number"
    )
    padded = keras.Sequential(
        [
            keras.Input((4, 4, 1)),
            QuantConv2D(2, 1, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="c"),
            QuantConv2D(
                2, 3, padding="same", pad_values=1.0, input_quantizer="dorefa(2)", kernel_quantizer="ste_sign", name="c2"
            ),
            QuantActivation("ste_sign"),
        ]
    )
    assert _refusal(padded) == (
        "layer 'c2' (QuantConv2D): its input_quantizer dorefa scales its codes and the layer pads with "
        "pad_values=1.0, not 0.0, so it cannot sum the codes and apply the scale after; pad with 0.0 or use an "
        "unscaled input_quantizer"
    )
