"""Kernels scaled along an axis the layer sums over (XNOR per input channel, chosen input channels
binarized XNOR-style, QKeras alphas along the input axis): with power-of-two scales they freeze
into integer codes on one grid and Keras = emulator (= C-simulation) exactly; other scales are
refused in one sentence that names the power-of-two spelling."""

import warnings

import keras
import numpy as np
import pytest
from bn import randomize_bn
from graphs import PYNQ

import edgebnn  # noqa: F401
from edgebnn.freeze import FreezeError, freeze
from edgebnn.layers import QuantActivation, QuantConv1D, QuantConv2D, QuantDense, QuantDepthwiseConv2D, QuantSeparableConv2D
from edgebnn.verify import verify

IN_Q = "quantized_bits(3, 1)"


def layer(kind: str, kq: str):
    """(the layer of ``kind`` with the kernel quantizer ``kq`` where ``kind`` says, its input shape)."""
    common = dict(input_quantizer=IN_Q, use_bias=False)
    if kind == "dense":
        return QuantDense(4, kernel_quantizer=kq, **common), (6,)
    if kind == "conv1d":
        return QuantConv1D(4, 3, kernel_quantizer=kq, **common), (8, 3)
    if kind == "conv2d":
        return QuantConv2D(4, 3, padding="same", kernel_quantizer=kq, **common), (5, 5, 3)
    if kind == "depthwise":
        return QuantDepthwiseConv2D(3, depth_multiplier=2, depthwise_quantizer=kq, **common), (5, 5, 3)
    if kind == "separable":  # the pointwise kernel (1, 1, C * M, F) sums over its axis 2
        return QuantSeparableConv2D(4, 3, depth_multiplier=2, pointwise_quantizer=kq, depthwise_quantizer="ste_sign", **common), (
            5,
            5,
            3,
        )
    raise ValueError(kind)


def model_of(kind: str, kq: str, seed: int = 0):
    keras.utils.set_random_seed(seed)
    mid, shape = layer(kind, kq)
    model = keras.Sequential(
        [keras.Input(shape), mid, keras.layers.BatchNormalization(), QuantActivation("quantized_bits(4, 2)")]
    )
    randomize_bn(model, np.random.default_rng(seed), mean_scale=1.0)
    x = np.random.default_rng(seed + 1).uniform(-2.5, 2.5, (300, *shape)).astype(np.float32)
    return model, x


# (layer kind, the axis its kernel sums over that the scales follow, the number of indices there)
SUMMED = [("dense", 0, 6), ("conv1d", 1, 3), ("conv1d", 0, 3), ("conv2d", 2, 3), ("conv2d", 0, 3), ("depthwise", 0, 3)]
SUMMED += [("depthwise", 1, 3), ("separable", 2, 6)]


def forms_along(axis: int, n: int, po2: bool):
    p = f", po2={po2}" if po2 else ""
    chosen = [0, n - 1] if n > 2 else [1]
    return [
        f"xnor_sign(axis={axis}{p})",
        f"partial(xnor_sign(axis={axis}, clip_value=None{p}), {chosen}, axis={axis}, other=quantized_bits(4, 0))",
        f"partial(xnor_sign(axis={axis}{p}), {chosen}, axis={axis}, other=ste_sign)",
        f"partial(ternary, {chosen}, axis={axis}, other=xnor_sign(axis=None{p}))",
    ]


@pytest.mark.parametrize("kind,axis,n", SUMMED)
def test_power_of_two_scales_along_the_sum_are_exact(kind, axis, n):
    for kq in forms_along(axis, n, po2=True):
        model, x = model_of(kind, kq)
        graph = freeze(model)
        report = verify(model, graph, x)
        assert report.keras_vs_emulator == 0, (kq, report.describe())
        assert len(np.unique(report.outputs["keras"], axis=0)) > 20, kq


@pytest.mark.parametrize("kind,axis,n", SUMMED)
def test_other_scales_along_the_sum_are_refused_with_the_po2_spelling(kind, axis, n):
    for kq in forms_along(axis, n, po2=False):
        model, _ = model_of(kind, kq)
        with pytest.raises(FreezeError) as err:
            freeze(model)
        msg = str(err.value)
        assert "which the layer sums over" in msg and "not powers of two" in msg, msg
        assert "po2=True" in msg and msg.count(".") <= 8 and "\n" not in msg, msg


def test_a_depthwise_scale_per_channel_is_an_output_scale_and_needs_no_power_of_two():
    """A depthwise kernel's axis 2 is its channels: output c*M+m takes channel c's scale after the sum."""
    for kq in ["xnor_sign(axis=2)", "quantized_bits(3, 0, alpha='auto', scale_axis=2)", "xnor_sign(axis=2, po2=True)"]:
        model, x = model_of("depthwise", kq)
        report = verify(model, freeze(model), x)
        assert report.keras_vs_emulator == 0, (kq, report.describe())


def test_a_zero_slice_is_a_zero_scale_and_deploys():
    model, x = model_of("conv2d", "partial(xnor_sign(axis=2, po2=True), [0, 1], axis=2, other=quantized_bits(4, 0))")
    conv = model.layers[0]
    k = conv.kernel.numpy()
    k[:, :, 1, :] = 0.0  # E_1 = 0: the slice quantizes to 0 (sign(0) * 0)
    conv.kernel.assign(k)
    graph = freeze(model)
    assert not np.any(graph.nodes[1].params["weight"][:, :, 1, :])
    assert verify(model, graph, x).keras_vs_emulator == 0


def test_the_codes_are_the_signs_shifted_by_the_scales():
    model, _ = model_of("conv2d", "partial(xnor_sign(axis=2, po2=True), [0, 2], axis=2, other=quantized_bits(4, 0))")
    conv = model.layers[0]
    node = freeze(model).nodes[1]
    t = node.fixed_attr("weight_type")
    assert np.array_equal(t.from_codes(node.params["weight"]), conv.quantized_kernel().numpy())
    w = conv.kernel.numpy()
    for i in (0, 2):  # each chosen slice: sign * 2**round(log2 mean|W_i|)
        e = 2.0 ** np.round(np.log2(np.mean(np.abs(w[:, :, i, :]))))
        assert np.array_equal(t.from_codes(node.params["weight"][:, :, i, :]), np.where(w[:, :, i, :] >= 0, e, -e))


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_chosen_input_channels_c_simulate_bit_for_bit(tmp_path, io_type):
    from edgebnn.backends.hls4ml import export

    keras.utils.set_random_seed(3)
    xnor = "partial(xnor_sign(axis=2, clip_value=None, po2=True), [0, 2], axis=2, other=quantized_bits(4, 0))"
    model = keras.Sequential(
        [
            keras.Input((6, 6, 1)),
            QuantConv2D(
                4, 3, padding="same", input_quantizer="quantized_bits(4, 0, keep_negative=False)", kernel_quantizer="ste_sign"
            ),
            keras.layers.BatchNormalization(),
            QuantConv2D(4, 3, input_quantizer="ste_sign", kernel_quantizer=xnor, use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.Flatten(),
            QuantDense(5, input_quantizer="ste_sign", kernel_quantizer="xnor_sign(axis=0, po2=True)", use_bias=False),
            keras.layers.BatchNormalization(),
            QuantActivation("quantized_bits(5, 3)"),
        ]
    )
    randomize_bn(model, np.random.default_rng(3), mean_scale=2.0)
    graph = freeze(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        project = export(graph, tmp_path / "prj", board=PYNQ, io_type=io_type)
    x = np.random.default_rng(4).random((120, 6, 6, 1)).astype(np.float32)
    report = verify(model, graph, x, project=project)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
    assert len(np.unique(report.outputs["csim"], axis=0)) > 10


def test_a_slice_of_nearly_zero_weights_beyond_32_bits_of_codes_is_refused_by_name():
    model, _ = model_of("conv2d", "xnor_sign(axis=2, po2=True)")
    conv = model.layers[0]
    k = conv.kernel.numpy()
    k[:, :, 1, :] = 1e-12  # E_1 = 2**-40 next to scales near 2**-3: codes of 38 bits
    conv.kernel.assign(k)
    with pytest.raises(FreezeError, match=r"^layer '\w+' \(QuantConv2D\): its kernel_quantizer .* need more than 32 bits"):
        freeze(model)
