"""The 1-D layers end to end without C++: the graph ops conv1d, maxpool1d, avgpool1d, sumpool1d
and zeropad1d against NumPy, their freeze from Keras (QuantConv1D with every padding, strides,
dilation and pad_values; MaxPooling1D, AveragePooling1D, their global forms, averages over any
number of values with adversarial BatchNormalization after them, ZeroPadding1D) bit for bit
against ``model.predict`` on edge inputs, the refusals word for word, and their cost rows. The
C-simulation of every 1-D op is tests/test_conformance.py's ``ops_1d`` graph."""

import warnings

import keras
import numpy as np
import pytest
from bn import adversarial_on_inputs
from graphs import ops_1d_graph

import edgebnn  # noqa: F401
from edgebnn.emulate import emulate
from edgebnn.estimate import estimate
from edgebnn.fixed import FixedType
from edgebnn.freeze import FreezeError, freeze
from edgebnn.graph import (
    Graph,
    GraphError,
    avgpool1d_node,
    conv1d_node,
    input_node,
    maxpool1d_node,
    sumpool1d_node,
    zeropad1d_node,
)
from edgebnn.layers import QuantActivation, QuantConv1D, QuantDense

IN_Q = "quantized_bits(4, 1, keep_negative=True)"
T = FixedType.from_string("fixed<5,2,RND_CONV,SAT>")
W = FixedType.from_string("fixed<3,3>")


# ------------------------------------------------------------------------------ graph ops


def _ref_conv(q, w, stride, left, right, pad_value):
    xp = np.pad(q, ((0, 0), (left, right), (0, 0)), constant_values=pad_value)
    k = w.shape[0]
    n_out = (xp.shape[1] - k) // stride + 1
    return np.stack([np.einsum("nkc,kcf->nf", xp[:, j * stride : j * stride + k], w) for j in range(n_out)], axis=1)


@pytest.mark.parametrize(
    "k,stride,padding,pad_code", [(3, 1, (1, 1), 0), (2, 2, (0, 1), 3), (1, 2, (0, 0), 0), (4, 1, (3, 0), -2)]
)
def test_conv1d_is_the_cross_correlation_keras_computes(k, stride, padding, pad_code):
    rng = np.random.default_rng(k)
    inp = input_node("x", (9, 2), T)
    w = rng.integers(-3, 4, (k, 2, 3))
    bias = rng.integers(-9, 9, 3)
    node = conv1d_node("c", inp, w, W, (stride,), padding, pad_code, bias, FixedType.from_string("fixed<6,4>"))
    g = Graph("g", [inp, node])
    x = rng.uniform(-5, 5, (30, 9, 2))
    want = _ref_conv(T.quantize(x), w, stride, *padding, float(T.from_codes(pad_code))) + bias * 2.0**-2
    got = emulate(g, x)
    assert np.array_equal(got, want)
    assert np.all(got >= node.lo) and np.all(got <= node.hi)


def test_conv1d_nodes_check_their_shapes():
    inp = input_node("x", (9, 2), T)
    node = conv1d_node("c", inp, np.ones((3, 2, 1), dtype=int), W)
    node.shape = (8, 1)
    with pytest.raises(GraphError, match=r"graph node 'c' \(conv1d\): output shape must be \(1, 7, 1\)"):
        Graph("g", [inp, node])
    with pytest.raises(GraphError, match=r"needs an \(L, C\) input and weight \(k, C, F\) with C=2"):
        Graph("g", [inp, conv1d_node("c", input_node("x", (9, 3), T), np.ones((3, 3, 1), dtype=int), W)])


def test_pools_and_padding_are_exact():
    rng = np.random.default_rng(0)
    inp = input_node("x", (8, 3), T)
    mx = maxpool1d_node("mx", inp, 3, 1)
    avg = avgpool1d_node("avg", mx, 2)
    pad = zeropad1d_node("pad", avg, (2, 1))
    g = Graph("g", [inp, mx, avg, pad])
    x = rng.uniform(-5, 5, (40, 8, 3))
    out = emulate(g, x, return_all=True)
    q = T.quantize(x)
    want_mx = np.stack([q[:, i : i + 3].max(axis=1) for i in range(6)], axis=1)
    want_avg = np.stack([want_mx[:, 2 * i : 2 * i + 2].mean(axis=1) for i in range(3)], axis=1)
    assert np.array_equal(out["mx"], want_mx)
    assert np.array_equal(out["avg"], want_avg)
    assert avg.type.lsb_exp == T.lsb_exp - 1
    assert np.array_equal(out["pad"], np.pad(want_avg, ((0, 0), (2, 1), (0, 0))))
    assert np.all(pad.lo <= 0) and np.all(pad.hi >= 0)
    with pytest.raises(ValueError, match="power of two"):
        avgpool1d_node("a", inp, 3)


def test_sumpool1d_sums_the_codes_on_the_input_grid():
    inp = input_node("x", (9, 2), T)
    node = sumpool1d_node("s", inp, 3, 2)
    g = Graph("g", [inp, node])
    assert node.shape == (4, 2) and node.type.lsb_exp == T.lsb_exp
    assert np.array_equal(node.hi, inp.hi * 3) and np.array_equal(node.lo, inp.lo * 3)
    x = np.random.default_rng(2).uniform(-6, 6, (30, 9, 2))
    q = T.quantize(x)
    assert np.array_equal(emulate(g, x), np.stack([q[:, 2 * i : 2 * i + 3].sum(axis=1) for i in range(4)], axis=1))
    node.type = node.type.replace(width=node.type.width + 1, integer=node.type.integer)
    with pytest.raises(GraphError, match=r"graph node 's' \(sumpool1d\): its type .* must have the input's step 2\*\*-3"):
        Graph("g", [inp, node])
    with pytest.raises(GraphError, match=r"graph node 's' \(sumpool1d\): pools an \(L, C\) input with pool \[p\]"):
        Graph("g", [input_node("x", (9, 2, 1), T), sumpool1d_node("s", inp, 3)])


def test_a_1d_window_sum_float32_cannot_hold_is_recorded():
    from edgebnn.freeze.passes.float32_exactness import inexact

    for bits, exact in ((22, True), (24, False)):
        inp = input_node("x", (6, 1), FixedType.from_string(f"fixed<{bits},2>"))
        assert inexact([inp, sumpool1d_node("s", inp, 3)]) == ([] if exact else ["s"])  # sums of 3 * 2**(bits - 1) codes


def test_each_1d_op_gets_a_cost_row_like_its_2d_twin():
    g = ops_1d_graph()
    for io_type in ("io_parallel", "io_stream"):
        rows = {r.name: r for r in estimate(g, "pynq-z2", io_type=io_type).rows}
        assert rows["conv"].op == "conv1d" and rows["conv"].detail["kernel"] == [1, 3]
        assert rows["pool"].op == "maxpool1d" and rows["pool"].detail["comparators"] > 0
        assert rows["avg"].op == "avgpool1d" and rows["avg"].dsp == 0
        # no logic of its own; in io_stream its 7-deep FIFO is an SRL32, a LUT per bit of a word; in
        # io_parallel (a DATAFLOW design: it has convolutions) a channel per element of its array
        pad = rows["pad"]
        if io_type == "io_stream":
            assert pad.lut == pad.detail["stream_fifo_bits"] // pad.detail["stream_fifo_depth"]
        else:
            assert pad.detail["dataflow_channels"] == 7 * 3 and pad.lut == pad.detail["dataflow_channel_lut"]
        assert pad.op == "zeropad1d"
        assert rows["sum"].op == "sumpool1d" and rows["sum"].dsp == 0 and rows["sum"].detail["adder_levels"] == 2


# ------------------------------------------------------------------------------ freeze


def _model(*layers, shape=(12, 2)):
    return keras.Sequential([keras.Input(shape), *layers])


def _set(model, seed=0):
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            c = layer.input.shape[-1]
            gamma = rng.choice([1.0, -1.0, 0.0, 0.5], c)
            layer.set_weights([gamma, rng.normal(size=c), rng.normal(size=c), rng.uniform(0.2, 2, c)])
        elif layer.weights:
            layer.set_weights([rng.uniform(-1.5, 1.5, w.shape).astype(np.float32) for w in layer.get_weights()])
    return model


def _edge_inputs(shape, n=64, seed=1):
    """Grid points, exact ties of the input grid (step 2**-2), values between and far out of range."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(-40, 40, (n, *shape))
    x = np.where(rng.random((n, *shape)) < 0.5, codes * 0.25, (codes + 0.5) * 0.25)
    x = np.where(rng.random((n, *shape)) < 0.1, rng.choice([-1e3, 1e3, 0.0], (n, *shape)), x)
    return x.astype(np.float32)


def assert_frozen_exactly(model, shape=(12, 2)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model)
    x = _edge_inputs(shape)
    for batch in (1, 32):
        keras_out = model.predict(x, batch_size=batch, verbose=0)
        assert np.array_equal(emulate(graph, x).reshape(keras_out.shape), keras_out)
    return graph


def _conv(filters=3, k=3, **kw):
    kw.setdefault("input_quantizer", IN_Q)
    kw.setdefault("use_bias", False)
    return QuantConv1D(filters, k, kernel_quantizer="ste_sign", **kw)


@pytest.mark.parametrize(
    "conv",
    [
        dict(padding="valid"),
        dict(padding="same", strides=2),
        dict(padding="same", k=4),  # TensorFlow's split: the odd position after
        dict(padding="causal", dilation_rate=2),
        dict(padding="same", dilation_rate=3, pad_values=1.0),
        dict(padding="valid", dilation_rate=2, k=2, use_bias=True, bias_quantizer="quantized_bits(5, 2)"),
        dict(padding="valid", k=1, strides=2),
    ],
)
def test_quantconv1d_freezes_exactly(conv):
    k = conv.pop("k", 3)
    model = _set(_model(_conv(k=k, **conv), keras.layers.BatchNormalization(), QuantActivation("ste_sign")))
    graph = assert_frozen_exactly(model)
    node = next(n for n in graph.nodes if n.op == "conv1d")
    if conv.get("pad_values"):  # a zeropad1d node of the value, then a conv1d without padding
        assert graph[node.inputs[0]].op == "zeropad1d" and node.attrs["padding"] == [0, 0]
    d = conv.get("dilation_rate", 1)
    assert node.params["weight"].shape[0] == (k - 1) * d + 1  # dilation as zero taps
    assert not node.params["weight"][[i for i in range(node.params["weight"].shape[0]) if i % d]].any()


@pytest.mark.parametrize(
    "pools",
    [
        [keras.layers.BatchNormalization(), keras.layers.MaxPooling1D(2), QuantActivation("ste_sign")],  # moved, any gamma
        [keras.layers.MaxPooling1D(3, strides=1), keras.layers.BatchNormalization(), QuantActivation(IN_Q)],  # on the accumulator
        # "same": a zeropad1d of the lowest reachable code, then the valid pool (moved with it, or on the accumulator)
        [keras.layers.BatchNormalization(), keras.layers.MaxPooling1D(3, strides=2, padding="same"), QuantActivation("ste_sign")],
        [keras.layers.MaxPooling1D(2, padding="same"), keras.layers.BatchNormalization(), QuantActivation(IN_Q)],
        [QuantActivation(IN_Q), keras.layers.MaxPooling1D(4, strides=3, padding="same")],
        [keras.layers.AveragePooling1D(4, strides=2), keras.layers.BatchNormalization(), QuantActivation(IN_Q)],
        [keras.layers.BatchNormalization(), QuantActivation(IN_Q), keras.layers.AveragePooling1D(2)],
        [keras.layers.GlobalMaxPooling1D(), keras.layers.BatchNormalization(), QuantActivation("ste_sign")],
        [keras.layers.BatchNormalization(), keras.layers.GlobalMaxPooling1D(), QuantActivation("ste_sign")],
        [QuantActivation(IN_Q), keras.layers.GlobalAveragePooling1D(keepdims=True)],
        [keras.layers.ZeroPadding1D((2, 1)), keras.layers.BatchNormalization(), QuantActivation("ste_sign")],
        [QuantActivation("ste_sign"), keras.layers.ZeroPadding1D(1), _conv(2, 3, input_quantizer=None)],
        [QuantActivation(IN_Q), keras.layers.Flatten(), QuantDense(3, kernel_quantizer="ste_sign", use_bias=False)],
    ],
)
def test_1d_pools_and_padding_freeze_exactly(pools):
    model = _set(_model(_conv(filters=3, k=3, padding="same"), *pools, shape=(8, 2)))
    assert_frozen_exactly(model, shape=(8, 2))


def test_a_max_pool_before_a_decreasing_requantization_is_refused():
    model = _model(
        _conv(padding="same", use_bias=True, name="c"),
        keras.layers.MaxPooling1D(2, name="mp"),
        keras.layers.BatchNormalization(name="bn"),
        QuantActivation("ste_sign", name="q"),
    )
    _set(model)
    model.get_layer("bn").set_weights([np.array([-1.0, 1, 1]), np.zeros(3), np.zeros(3), np.ones(3)])
    with pytest.raises(FreezeError) as err:
        freeze(model)
    assert str(err.value) == (
        "layer 'mp' (MaxPooling1D) sits between c.bias and the quantizer of 'q', whose requantization decreases in "
        "channel(s) [0] (e.g. a negative BatchNormalization gamma after the pool), so the maximum cannot move after "
        "the quantizer exactly; pool after the activation (put 'mp' after 'q') or directly on the accumulator before "
        "the normalization"
    )


def _sum_model(pool, shape, seed):
    """conv -> ``pool`` -> an adversarial BatchNormalization -> quantizer, frozen without a warning,
    Keras (batch 1 and 32) = emulator on edge inputs."""
    model = _set(
        _model(
            _conv(padding="same", name="c"), pool, keras.layers.BatchNormalization(name="bn"), QuantActivation(IN_Q), shape=shape
        )
    )
    x = _edge_inputs(shape, n=240)
    adversarial_on_inputs(model, x, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exact: no float32 caveat
        graph = freeze(model)
    for batch in (1, 32):
        keras_out = model.predict(x, batch_size=batch, verbose=0)
        assert np.array_equal(emulate(graph, x).reshape(keras_out.shape), keras_out), batch
    assert len(np.unique(emulate(graph, x))) > 1  # the outputs vary
    return graph


@pytest.mark.parametrize("pool,strides", [(3, None), (3, 1), (5, 2), (6, None), (6, 4)])
def test_averages_over_windows_not_a_power_of_two_freeze_exactly(pool, strides):
    graph = _sum_model(keras.layers.AveragePooling1D(pool, strides=strides, name="ap"), (12, 2), seed=pool)
    assert [n.op for n in graph.nodes[1:]] == ["conv1d", "sumpool1d", "threshold"]
    assert graph["ap"].attrs == {"pool": [pool], "strides": [strides or pool]}


@pytest.mark.parametrize("length,keepdims", [(3, False), (7, True), (7, False), (12, False)])
def test_global_averages_over_lengths_not_a_power_of_two_freeze_exactly(length, keepdims):
    graph = _sum_model(keras.layers.GlobalAveragePooling1D(keepdims=keepdims, name="gap"), (length, 2), seed=length)
    assert [n.op for n in graph.nodes[1:]] == ["conv1d", "sumpool1d", "threshold"] + ([] if keepdims else ["flatten"])
    assert graph["gap"].attrs["pool"] == [length]


REFUSALS = [
    (
        [keras.layers.BatchNormalization(name="bn"), keras.layers.AveragePooling1D(2, name="ap"), QuantActivation("ste_sign")],
        "layer 'ap' (AveragePooling1D) averages the real-valued outputs of bn, whose float32 mean cannot be moved past "
        "them exactly; pool after the activation (after the QuantActivation that quantizes them) or directly on the "
        "accumulator of 'c', before the normalization",
    ),
    (
        [keras.layers.BatchNormalization(name="bn"), keras.layers.ZeroPadding1D(1, name="zp"), QuantActivation("ste_sign")],
        "layer 'zp' (ZeroPadding1D) pads the real-valued outputs of bn with zeros the quantizer after it would see "
        "unchanged; pad after the activation (after the QuantActivation that quantizes them) or directly on the "
        "accumulator of 'c', before the normalization",
    ),
    (
        [keras.layers.AveragePooling1D(3, name="ap")],
        "the model ends with real-valued outputs of ap that hardware cannot reproduce exactly; end it with a "
        "QuantActivation (e.g. quantized_bits(8, 3)) or a QuantDense",
    ),
    (
        [keras.layers.GlobalAveragePooling1D(name="gap"), QuantDense(2, kernel_quantizer="ste_sign", name="d")],
        "layer 'd' (QuantDense) receives real-valued inputs from gap; give it an input_quantizer or insert a "
        "QuantActivation before it",
    ),
    (
        [keras.layers.BatchNormalization(name="bn"), keras.layers.AveragePooling1D(3, name="ap"), QuantActivation("ste_sign")],
        "layer 'ap' (AveragePooling1D) averages the real-valued outputs of bn, whose float32 mean cannot be moved past "
        "them exactly; pool after the activation (after the QuantActivation that quantizes them) or directly on the "
        "accumulator of 'c', before the normalization",
    ),
    (
        [keras.layers.AveragePooling1D(3, padding="same", name="ap"), QuantActivation("ste_sign")],
        "layer 'ap' (AveragePooling1D) has padding='same'; only padding='valid' can be frozen: Keras divides its "
        "border windows by the fewer values they hold",
    ),
    (
        [keras.layers.AveragePooling1D(2, padding="same", name="ap"), QuantActivation("ste_sign")],
        "layer 'ap' (AveragePooling1D) has padding='same'; only padding='valid' can be frozen: Keras divides its "
        "border windows by the fewer values they hold",
    ),
    (
        [
            keras.layers.BatchNormalization(name="bn"),
            keras.layers.GlobalMaxPooling1D(name="gmp"),
            keras.layers.BatchNormalization(name="bn2"),
            QuantActivation("ste_sign"),
        ],
        "layer 'bn2' (BatchNormalization) normalizes the flattened real-valued outputs of bn; quantize before "
        "'gmp' (GlobalMaxPooling1D) or normalize before it",
    ),
]


@pytest.mark.parametrize("after,message", REFUSALS)
def test_1d_refusals_are_one_sentence(after, message):
    model = _set(_model(_conv(padding="same", name="c"), *after))
    with pytest.raises(FreezeError) as err:
        freeze(model)
    assert str(err.value) == message


def test_pad_values_off_the_input_grid_are_refused():
    model = _set(_model(_conv(padding="same", pad_values=0.3, name="c"), QuantActivation("ste_sign")))
    with pytest.raises(FreezeError) as err:
        freeze(model)
    assert str(err.value) == (
        "layer 'c' (QuantConv1D) pads with pad_values=0.3, which is not on the grid of its quantized input "
        "fixed<4,2,RND_CONV,SAT>; pad with a value the input quantizer can produce (e.g. 1.0 or -1.0 after a sign)"
    )


# ------------------------------------------------------------------------------ export refusals (no C++)


def test_export_refuses_a_non_zero_pad_value_not_overlapping_stream_windows():
    from edgebnn.backends.hls4ml.exporter import check_graph
    from edgebnn.errors import EdgebnnError

    inp = input_node("x", (9, 2), T)
    conv = conv1d_node("c", inp, np.ones((3, 2, 1), dtype=int), W, padding=(1, 1), pad_code=4)
    with pytest.raises(EdgebnnError) as err:
        check_graph(Graph("g", [inp, conv]))
    assert str(err.value) == (
        "graph node 'c' (conv1d) pads with the value 0.5 but hls4ml pads convolutions with zeros only; "
        "train it with pad_values=0 or padding='valid'"
    )
    pool = maxpool1d_node("p", inp, 2, 1)
    for io_type in ("io_parallel", "io_stream"):  # hls4ml's line-buffer Pooling1D takes any stride
        check_graph(Graph("g", [inp, pool]), io_type)


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_pad_values_simulate_as_keras_computes(tmp_path, io_type):
    """larq's pad_values of 'same' QuantConv1D layers (+1 then -1 on a binary input) through
    EdgebnnPad1D: Keras = emulator = C-simulation, bit for bit."""
    from graphs import PYNQ, export_quietly

    from edgebnn.verify import verify

    model = _set(
        _model(
            _conv(4, 3, padding="same", pad_values=1.0),
            keras.layers.BatchNormalization(),
            QuantActivation("ste_sign"),
            _conv(3, 4, padding="same", pad_values=-1.0, input_quantizer=None),
            keras.layers.BatchNormalization(),
            QuantActivation(IN_Q),
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model)
    pads = [n for n in graph.nodes if n.op == "zeropad1d"]
    assert [float(n.type.from_codes(n.attrs["pad_code"])) for n in pads] == [1.0, -1.0]
    project = export_quietly(graph, tmp_path / "p", board=PYNQ, io_type=io_type)
    report = verify(model, graph, _edge_inputs((12, 2)), project=project)
    assert report.ok and report.samples == 64 and report.emulator_vs_csim == 0, report
