"""Kernels scaled along an axis the layer sums over (XNOR per input channel, chosen input channels
binarized XNOR-style, QKeras alphas along the input axis) freeze into integer codes on one grid
and Keras = emulator (= C-simulation) exactly: power-of-two scales as a float32 sum of integers,
other float32 scales as the exact float64 sum rounded once to float32 (``layers.sums_exactly``),
whose rounding the thresholds replay, ties included."""

import warnings

import keras
import numpy as np
import pytest
from bn import randomize_bn
from graphs import PYNQ

import edgebnn  # noqa: F401
from edgebnn.emulate import emulate
from edgebnn.freeze import FreezeError, freeze, trace
from edgebnn.layers import (
    QuantActivation,
    QuantConv1D,
    QuantConv2D,
    QuantDense,
    QuantDepthwiseConv2D,
    QuantSeparableConv2D,
    sums_exactly,
)
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
def test_other_scales_along_the_sum_are_exact(kind, axis, n):
    """Float32 scales (mean|W| per slice): the layer sums exactly in float64 and rounds once, the
    graph holds the exact sum (weights on one fine grid) and the thresholds replay the rounding."""
    for kq in forms_along(axis, n, po2=False):
        model, x = model_of(kind, kq)
        assert sums_exactly(model.layers[0]), kq
        graph = freeze(model)
        assert graph.meta["keras_float32_exact"], kq
        report = verify(model, graph, x)
        assert report.keras_vs_emulator == 0, (kq, report.describe())
        assert len(np.unique(report.outputs["keras"], axis=0)) > 20, kq


@pytest.mark.parametrize("kind,axis,n", SUMMED)
def test_verify_traces_a_float32_scaled_sum_as_the_layer_computes_it(kind, axis, n):
    """verify's trace (Keras node by node, where it looks for the first node that differs)
    computes a sum with float32 scales as the layer does, exact in float64 and rounded once, and
    that is the node's exact sum rounded once (the trace summed in float32, so the fuzzer's seed
    33425 was located at such a sum, not at the BatchNormalization whose recorded caveat explained
    it). A separable layer's depthwise result stays exact (its pointwise sum reads it unrounded)."""
    model, x = model_of(kind, forms_along(axis, n, po2=False)[0])
    mid = model.layers[0]
    own = np.asarray(keras.Model(model.inputs[0], mid.output)(x))
    traced, nodes = trace(model, x), emulate(freeze(model), x, return_all=True)
    assert np.array_equal(traced[mid.name], own)
    assert np.array_equal(nodes[mid.name].astype(np.float32), own)
    assert not np.array_equal(nodes[mid.name], own)  # the exact sums are finer than float32
    if kind == "separable":
        assert np.array_equal(traced[f"{mid.name}_depthwise"], nodes[f"{mid.name}_depthwise"])


def test_a_separable_layer_summing_exactly_takes_a_depthwise_scale_per_channel():
    """Float32 scales along the pointwise sum (the layer sums in float64) and a power-of-two XNOR
    scale per depthwise channel: the layer multiplied its float64 depthwise result by the float32
    scales and crashed (the fuzzer's seed 33444 at raised float32-scale rates); the scale is a
    power of two, so the graph shifts it into the codes and Keras = emulator."""
    keras.utils.set_random_seed(6)
    mid = QuantSeparableConv2D(
        3, 1, depth_multiplier=2, use_bias=False, input_quantizer=IN_Q,
        depthwise_quantizer="xnor_sign(axis=2, po2=True)", pointwise_quantizer="xnor_sign(axis=2, po2=False)",
    )  # fmt: skip
    model = keras.Sequential([keras.Input((4, 4, 3)), mid, keras.layers.BatchNormalization(), QuantActivation(IN_Q)])
    randomize_bn(model, np.random.default_rng(6), mean_scale=0.5)
    assert sums_exactly(mid)
    x = np.random.default_rng(7).uniform(-2.5, 2.5, (200, 4, 4, 3)).astype(np.float32)
    report = verify(model, freeze(model), x)
    assert report.keras_vs_emulator == 0, report.describe()
    assert len(np.unique(report.outputs["keras"], axis=0)) > 100


def _separable_scaled(depthwise_q: str, pointwise_q: str):
    keras.utils.set_random_seed(6)
    mid = QuantSeparableConv2D(
        3, 2, depth_multiplier=2, use_bias=False, input_quantizer="quantized_bits(4, 2)",
        depthwise_quantizer=depthwise_q, pointwise_quantizer=pointwise_q, name="sep",
    )  # fmt: skip
    model = keras.Sequential([keras.Input((4, 4, 3)), mid, keras.layers.BatchNormalization(), QuantActivation(IN_Q)])
    randomize_bn(model, np.random.default_rng(6), mean_scale=0.5)
    return model


def test_a_separable_layer_with_float32_scales_summed_in_both_kernels_is_refused_in_one_sentence():
    """XNOR scales along a summed axis in both kernels: the depthwise sums reach 30 significant bits,
    each pointwise product adds a 24-bit scale, and the pointwise sum needs 56 bits, past float64's
    53, so Keras rounds in TensorFlow's order (it was refused as an accumulator too wide to
    enumerate, at the next quantizer). The refusal names the layer and what to change (a power-of-two
    depthwise scale with float32 pointwise scales deploys: the test before this one)."""
    with pytest.raises(FreezeError) as err:
        freeze(_separable_scaled("xnor_sign(axis=0)", "xnor_sign(axis=2)"))
    msg = str(err.value)
    assert msg.startswith("layer 'sep' (QuantSeparableConv2D): its depthwise_quantizer xnor_sign(axis=0)") and "\n" not in msg
    assert "needs 56 significant bits" in msg and "xnor_sign(po2=True, axis=2)" in msg and "axis=-1" in msg


def tie_model(order=(0, 1, 2)):
    """QuantDense(1) on integer inputs whose kernel is (1, 2**-24, 2**-30) (XNOR with one scale per
    input: each weight is its own scale), float bias -(1 + 2**-23), then a sign: the output is +1
    exactly when the sum rounds to float32 upwards, from 1 + 2**-24 on (a tie, which rounds to 1)."""
    w = np.array([1.0, 2.0**-24, 2.0**-30], dtype=np.float32)[list(order)]
    dense = QuantDense(1, input_quantizer="quantized_bits(4, 3)", kernel_quantizer="xnor_sign(axis=0, clip_value=None)")
    model = keras.Sequential([keras.Input((3,)), dense, QuantActivation("ste_sign")])
    dense.set_weights([w[:, None], np.array([-(1.0 + 2.0**-23)], dtype=np.float32)])
    return model


# inputs (x0, x1, x2) around the ties 1 + 2**-24 (to 1) and 1 + 3 * 2**-24 (to even: 1 + 2**-22)
TIE_INPUTS = np.array([[1, 1, 0], [1, 1, 1], [1, 1, -1], [1, 3, 0], [1, 3, -1], [1, 0, 7], [1, 2, 0], [2, -7, 0]])


def exact_rounded_signs(inputs):
    """sign(float32(exact sum) - (1 + 2**-23)): the sum is exact in float64 (31 bits), one rounding."""
    s = (inputs[:, 0] * 1.0 + inputs[:, 1] * 2.0**-24 + inputs[:, 2] * 2.0**-30).astype(np.float64)
    v = s.astype(np.float32) + np.float32(-(1.0 + 2.0**-23))
    return np.where(v >= 0, 1.0, -1.0)


def test_ties_of_the_float32_sum_round_once_to_even_in_keras_and_the_graph():
    x = TIE_INPUTS.astype(np.float32)
    want = exact_rounded_signs(TIE_INPUTS)
    assert list(want) == [-1, 1, -1, 1, 1, -1, 1, 1]
    for order in [(0, 1, 2), (2, 1, 0), (1, 0, 2)]:  # the same weights, summed in another order
        model = tie_model(order)
        xo = x[:, list(order)]
        assert np.array_equal(np.asarray(model.predict(xo, verbose=0))[:, 0], want), order
        assert np.array_equal(np.asarray(model(xo))[:, 0], want), order
        graph = freeze(model)
        assert np.array_equal(emulate(graph, xo)[:, 0], want), order


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
def test_ties_c_simulate_bit_for_bit(tmp_path, io_type):
    from graphs import csim_verified

    x = TIE_INPUTS.astype(np.float32)
    model = tie_model()
    report = csim_verified(model, freeze(model), x, tmp_path / "prj", io_type)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
    assert np.array_equal(report.outputs["keras"][:, 0], exact_rounded_signs(TIE_INPUTS))


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
@pytest.mark.parametrize("po2", [True, False])
def test_chosen_input_channels_c_simulate_bit_for_bit(tmp_path, io_type, po2):
    from edgebnn.backends.hls4ml import export

    keras.utils.set_random_seed(3)
    xnor = f"partial(xnor_sign(axis=2, clip_value=None, po2={po2}), [0, 2], axis=2, other=quantized_bits(4, 0))"
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
            QuantDense(5, input_quantizer="ste_sign", kernel_quantizer=f"xnor_sign(axis=0, po2={po2})", use_bias=False),
            keras.layers.BatchNormalization(),
            QuantActivation("quantized_bits(5, 3)"),
        ]
    )
    randomize_bn(model, np.random.default_rng(3), mean_scale=0.5)  # outputs vary with either scale
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


@pytest.mark.rtl
def test_ties_simulate_bit_for_bit_in_rtl(tmp_path):
    """The RTL backend sums the wide kernel codes and compares with the replayed thresholds too."""
    from edgebnn.backends.rtl import export

    model = tie_model()
    graph = freeze(model)
    project = export(graph, tmp_path / "rtl")
    project.compile()
    report = verify(model, graph, TIE_INPUTS.astype(np.float32), rtl=project)
    assert (report.keras_vs_emulator, report.emulator_vs_rtl) == (0, 0), report.describe()
    assert np.array_equal(report.outputs["keras"][:, 0], exact_rounded_signs(TIE_INPUTS))


def seed_002(axis: int) -> str:
    """XNOR with a float32 mean|W| on the chosen slice 1 of ``axis``, 4-bit fixed point elsewhere."""
    return f"partial(xnor_sign(axis={axis}, clip_value=None), [1], {axis}, other=quantized_bits(4))"


def every_kernel_model():
    """The chosen-slice XNOR form with float32 scales in each kind of kernel, one model: a conv2d and
    a separable pointwise kernel on their input channels (axis 2), a depthwise kernel on its channels
    (axis 2, an output axis), a conv1d kernel on its input channels (axis 1), a dense one (axis 0)."""
    keras.utils.set_random_seed(2)
    a = "quantized_bits(3, 1)"

    def then():
        return [keras.layers.BatchNormalization(), QuantActivation(a)]

    separable = dict(depthwise_quantizer="ste_sign", use_bias=False)

    model = keras.Sequential(
        [
            keras.Input((6, 6, 3)),
            QuantConv2D(4, 3, padding="same", input_quantizer=a, kernel_quantizer=seed_002(2), use_bias=False, name="conv2d"),
            *then(),
            QuantDepthwiseConv2D(3, depthwise_quantizer=seed_002(2), use_bias=False, name="depthwise"),
            *then(),
            QuantSeparableConv2D(4, 3, padding="same", pointwise_quantizer=seed_002(2), name="separable", **separable),
            *then(),
            keras.layers.Reshape((16, 4)),
            QuantConv1D(4, 3, kernel_quantizer=seed_002(1), use_bias=False, name="conv1d"),
            *then(),
            keras.layers.Flatten(),
            QuantDense(5, kernel_quantizer=seed_002(0), use_bias=False, name="dense"),
            keras.layers.BatchNormalization(),
            QuantActivation("quantized_bits(5, 3)"),
        ]
    )
    randomize_bn(model, np.random.default_rng(2), mean_scale=0.5)
    x = np.random.default_rng(3).uniform(-2.5, 2.5, (200, 6, 6, 3)).astype(np.float32)
    return model, x


def test_the_chosen_slice_form_with_float32_scales_is_exact_in_every_kernel():
    model, x = every_kernel_model()
    assert [layer.name for layer in model.layers if getattr(layer, "_tagged_kernels", None) and sums_exactly(layer)] == [
        "conv2d",
        "depthwise",
        "separable",
        "conv1d",
        "dense",
    ]  # a partial kernel keeps the plain product, on a depthwise kernel's channels (axis 2) too
    graph = freeze(model)
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    assert len(np.unique(report.outputs["keras"], axis=0)) > 100


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_the_chosen_slice_form_with_float32_scales_c_simulates_bit_for_bit_in_every_kernel(tmp_path, io_type):
    from graphs import csim_verified

    model, x = every_kernel_model()
    report = csim_verified(model, freeze(model), x, tmp_path / "prj", io_type)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()
    assert len(np.unique(report.outputs["keras"], axis=0)) > 100


@pytest.mark.parametrize("kind", ["depthwise", "separable"])
def test_unequal_strides_sum_exactly(kind):
    """TensorFlow's float64 depthwise convolution takes equal strides only; the exact sum with
    strides (1, 2) comes from the full kernel, the same numbers (the fuzzer's seed 33229)."""
    _, _, report = strided_sum_report(kind, (7, 7, 3), 4, strides=(1, 2))
    assert len(np.unique(report.outputs["keras"], axis=0)) > 100


def strided_sum_report(kind: str, shape: tuple, seed: int, **common):
    """(model, inputs, verify's report) of a depthwise or separable layer with seed-002 scales (an exact sum) built
    with ``common`` (strides, dilation, padding), between two quantizers and a BatchNormalization,
    on 200 inputs of ``shape``: Keras = emulator is asserted here."""
    keras.utils.set_random_seed(seed)
    if kind == "depthwise":
        mid = QuantDepthwiseConv2D(3, depth_multiplier=2, depthwise_quantizer=seed_002(0), use_bias=False, **common)
    else:
        mid = QuantSeparableConv2D(3, 3, pointwise_quantizer=seed_002(2), depthwise_quantizer="ste_sign", **common)
    model = keras.Sequential(
        [keras.Input(shape), QuantActivation(IN_Q), mid, keras.layers.BatchNormalization(), QuantActivation(IN_Q)]
    )
    randomize_bn(model, np.random.default_rng(seed), mean_scale=0.5)
    assert sums_exactly(mid)
    x = np.random.default_rng(seed + 1).uniform(-2.5, 2.5, (200, *shape)).astype(np.float32)
    report = verify(model, freeze(model), x)
    assert report.keras_vs_emulator == 0, report.describe()
    return model, x, report


@pytest.mark.parametrize("kind", ["depthwise", "separable"])
@pytest.mark.parametrize("padding", ["same", "valid"])
def test_strides_with_dilation_sum_exactly(kind, padding):
    """TensorFlow's convolution takes strides or dilation, not both: the exact sum with strides
    (1, 2) and dilation (1, 2) pads as the strided convolution would, convolves at stride 1 and
    subsamples, as Keras's depthwise convolution does (the fuzzer's seed 33537 at raised
    float32-scale rates crashed in the layer)."""
    model, x, report = strided_sum_report(kind, (7, 9, 3), 8, strides=(1, 2), dilation_rate=(1, 2), padding=padding)
    assert np.array_equal(np.asarray(model(x)), report.outputs["keras"])
    assert len(np.unique(report.outputs["keras"], axis=0)) > 100
