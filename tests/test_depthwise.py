"""Depthwise, separable and dilated 2-D convolutions: the depthwise_conv2d op against Keras's own
arithmetic, freeze (Keras = emulator bit for bit, edge inputs, refusals word for word), the
float32 check of a separable layer's intermediate, export refusals and the cost row."""

import warnings

import keras
import numpy as np
import pytest
from bn import adversarial_on_inputs, set_adversarial_bn
from graphs import PYNQ, depthwise_graph, edge_inputs, export_quietly

import edgebnn  # noqa: F401
from edgebnn.emulate import emulate
from edgebnn.errors import EdgebnnError
from edgebnn.fixed import FixedType
from edgebnn.freeze import FreezeError, FreezeWarning, freeze, trace
from edgebnn.graph import Graph, GraphError, depthwise_conv2d_node, input_node
from edgebnn.graph.ops._weighted import dilated
from edgebnn.graph.ops.depthwise_conv2d import full_kernel
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDepthwiseConv2D, QuantSeparableConv2D

IN_Q = "quantized_bits(4, 1)"  # fixed<4,2>: codes -8..7, step 1/4
WT = FixedType.from_string("fixed<3,3>")


def _edge_x(shape, n=96, seed=0):
    """Inputs on the fixed<4,2> grid, on its rounding ties, one float32 ulp around them, out of range."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(-12, 12, size=(n, *shape)).astype(np.float32)
    kind = rng.integers(0, 5, size=codes.shape)
    x = codes / 4
    tie = (codes + 0.5) / 4
    x = np.where(kind == 1, tie, x)
    x = np.where(kind == 2, np.nextafter(tie, np.float32(np.inf)), x)
    x = np.where(kind == 3, np.nextafter(tie, np.float32(-np.inf)), x)
    x = np.where(kind == 4, rng.choice(np.array([0.0, -0.0, 1e3, -1e3], dtype=np.float32), size=codes.shape), x)
    return x.astype(np.float32)


def _randomize(model, seed=0):
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if layer.weights and not isinstance(layer, keras.layers.BatchNormalization):
            layer.set_weights([rng.uniform(-1.5, 1.5, w.shape).astype(np.float32) for w in layer.get_weights()])
    return rng


def _assert_exact(model, x):
    """Keras (batch sizes 1 and 32, and its trace node by node) = the emulator of the frozen graph."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FreezeWarning)
        graph = freeze(model)
    emu = emulate(graph, x)
    for batch in (1, 32):
        ker = np.asarray(model.predict(x, batch_size=batch, verbose=0), dtype=np.float64)
        assert np.array_equal(ker.reshape(emu.shape), emu), f"batch {batch}"
    k, e = trace(model, x), emulate(graph, x, return_all=True)
    for node in graph.nodes:
        assert np.array_equal(k[node.name], e[node.name]), node.name
    return graph


# ------------------------------------------------------------------------------- the graph op


@pytest.mark.parametrize(
    "multiplier, strides, padding, rate",
    [(1, (1, 1), "valid", (1, 1)), (3, (2, 1), "same", (1, 1)), (2, (1, 1), "same", (2, 3)), (2, (2, 2), "valid", (2, 1))],
)
def test_the_op_computes_what_keras_depthwise_conv_computes(multiplier, strides, padding, rate):
    rng = np.random.default_rng(multiplier)
    t = FixedType.from_string("fixed<5,2,RND_CONV,SAT>")
    inp = input_node("in", (7, 8, 3), t)
    w = rng.integers(-3, 4, (2, 3, 3, multiplier))
    wd = dilated(w, rate)
    pads = ((0, 0), (0, 0))
    if padding == "same":
        from edgebnn.layers import _same_padding

        pads = tuple(_same_padding(n, k, s, 1) for n, k, s in zip((7, 8), wd.shape[:2], strides))
    node = depthwise_conv2d_node("dw", inp, wd, WT, strides, pads)
    x = t.from_codes(rng.integers(t.min_code, t.max_code + 1, (5, 7, 8, 3)))
    got = emulate(Graph("g", [inp, node]), x)
    want = keras.ops.depthwise_conv(
        x.astype(np.float32), WT.from_codes(w).astype(np.float32), strides, padding, dilation_rate=rate
    )
    assert np.array_equal(got, np.asarray(want, dtype=np.float64))
    assert node.shape == got.shape[1:] and np.all(got >= node.lo) and np.all(got <= node.hi)


def test_full_kernel_puts_each_output_channel_in_its_input_channels_block():
    w = np.arange(1, 2 * 2 * 3 * 2 + 1).reshape(2, 2, 3, 2)
    full = full_kernel(w)
    assert full.shape == (2, 2, 3, 6)
    for c in range(3):
        for m in range(2):
            col = full[:, :, :, c * 2 + m]
            assert np.array_equal(col[:, :, c], w[:, :, c, m]) and not np.delete(col, c, axis=2).any()


def test_the_op_refuses_malformed_nodes():
    inp = input_node("in", (4, 4, 2), FixedType.from_string("fixed<4,2>"))
    node = depthwise_conv2d_node("dw", inp, np.ones((3, 3, 2, 2), dtype=np.int64), WT)
    with pytest.raises(GraphError, match=r"graph node 'dw' \(depthwise_conv2d\): output shape must be \(2, 2, 4\)"):
        Graph("g", [inp, node.__class__(**{**node.__dict__, "shape": (2, 2, 2)})])
    bad = node.__class__(**{**node.__dict__, "params": {**node.params, "weight": np.ones((3, 3, 3, 2), dtype=np.int64)}})
    with pytest.raises(GraphError, match=r"needs an \(H, W, C\) input and weight \(kh, kw, C, M\) with C=2"):
        Graph("g", [inp, bad])


# ------------------------------------------------------------------------------------ freeze


def test_a_depthwise_layer_with_multiplier_same_padding_bias_and_bn_is_exact():
    model = keras.Sequential(
        [
            keras.Input((5, 6, 3)),
            QuantDepthwiseConv2D(
                (3, 3),
                depth_multiplier=2,
                padding="same",
                input_quantizer=IN_Q,
                depthwise_quantizer="quantized_bits(3, 1)",
                bias_quantizer="quantized_bits(5, 2)",
                name="dw",
            ),
            keras.layers.BatchNormalization(name="bn"),
            QuantActivation("quantized_bits(3, 1)", name="q"),
        ]
    )
    rng = _randomize(model)
    x = _edge_x((5, 6, 3))
    acc = np.asarray(keras.Model(model.inputs, model.layers[0].output).predict(x, verbose=0)).reshape(-1)
    set_adversarial_bn(model, rng, lambda layer: acc)
    graph = _assert_exact(model, x)
    assert [n.op for n in graph.nodes] == ["input", "depthwise_conv2d", "threshold"]
    assert graph["dw"].params["weight"].shape == (3, 3, 3, 2) and graph["dw"].shape == (5, 6, 6)


def test_a_separable_layer_is_a_depthwise_node_and_a_pointwise_node_on_its_accumulator():
    model = keras.Sequential(
        [
            keras.Input((6, 7, 2)),
            QuantSeparableConv2D(
                3,
                (2, 3),
                depth_multiplier=2,
                strides=(2, 1),
                padding="same",
                pad_values=1.0,
                input_quantizer=IN_Q,
                depthwise_quantizer="ste_sign",
                pointwise_quantizer="quantized_bits(3, 1)",
                bias_quantizer="quantized_bits(4, 2)",
                activation="relu",
                name="sep",
            ),
            QuantActivation("quantized_relu(3, 1)", name="q"),
        ]
    )
    _randomize(model, 1)
    graph = _assert_exact(model, _edge_x((6, 7, 2)))
    assert [(n.name, n.op) for n in graph.nodes] == [
        ("input", "input"),
        ("sep_pad", "pad2d"),  # pad_values=1.0: a pad2d node of that code, then a depthwise half without padding
        ("sep_depthwise", "depthwise_conv2d"),
        ("sep", "conv2d"),
        ("q", "cast"),
    ]
    assert "bias" not in graph["sep_depthwise"].params and "bias" in graph["sep"].params
    assert graph["sep_pad"].attrs["pad_code"] == 4 and graph["sep_depthwise"].attrs["padding"] == [[0, 0], [0, 0]]
    assert graph["sep"].params["weight"].shape == (1, 1, 4, 3)


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_dilated_convolutions_are_exact(padding):
    model = keras.Sequential(
        [
            keras.Input((9, 8, 2)),
            QuantConv2D(3, (3, 2), dilation_rate=(2, 3), padding=padding, input_quantizer=IN_Q, kernel_quantizer="ste_sign"),
            keras.layers.BatchNormalization(),
            QuantDepthwiseConv2D(
                (2, 2),
                dilation_rate=2,
                strides=(2, 1),  # Keras allows strides with dilation for the depthwise layers
                padding=padding,
                input_quantizer="ste_sign",
                depthwise_quantizer="quantized_bits(3, 1)",
                use_bias=False,
            ),
            QuantSeparableConv2D(
                2,
                (2, 2),
                dilation_rate=(1, 2),
                padding=padding,
                input_quantizer=IN_Q,
                depthwise_quantizer="ste_sign",
                pointwise_quantizer="ste_sign",
            ),
            QuantActivation("quantized_bits(4, 2)"),
        ]
    )
    _randomize(model, 2)
    graph = _assert_exact(model, _edge_x((9, 8, 2)))
    conv = graph.compute_nodes()[0]
    assert conv.op == "conv2d" and conv.params["weight"].shape == (5, 4, 2, 3)  # (3-1)*2+1, (2-1)*3+1
    assert not conv.params["weight"][1::2].any() and not conv.params["weight"][:, 1:3].any()  # zeros between taps


def test_a_strided_dilated_depthwise_layer_keeps_its_static_shape_for_the_next_padding():
    """Keras computes strides with dilation at stride 1 after a padding of dynamic size; in
    predict the next layer's pad_values at a stride needs the static shape, which the layer keeps."""
    model = keras.Sequential(
        [
            keras.Input((7, 7, 2)),
            QuantDepthwiseConv2D(
                (2, 2), strides=2, dilation_rate=2, padding="same", input_quantizer=IN_Q, depthwise_quantizer="ste_sign"
            ),
            QuantDepthwiseConv2D(
                (1, 2),
                strides=2,
                padding="same",
                pad_values=1.0,
                depth_multiplier=2,
                input_quantizer="ste_sign",
                depthwise_quantizer="ste_sign",
                use_bias=False,
            ),
        ]
    )
    _randomize(model, 3)
    graph = _assert_exact(model, _edge_x((7, 7, 2)))
    assert graph.output.shape == (2, 2, 4)


def test_refusals_name_the_layer_word_for_word():
    def first(layer, shape=(5, 5, 2)):
        return keras.Sequential([keras.Input(shape), layer, QuantActivation("ste_sign")])

    with pytest.raises(FreezeError) as err:
        freeze(first(QuantDepthwiseConv2D(3, input_quantizer=IN_Q, name="dw")))
    assert (
        str(err.value) == "layer 'dw' (QuantDepthwiseConv2D) has a float kernel; give it a depthwise_quantizer such as 'ste_sign'"
    )
    with pytest.raises(FreezeError) as err:
        freeze(first(QuantSeparableConv2D(2, 3, input_quantizer=IN_Q, depthwise_quantizer="ste_sign", name="sep")))
    assert (
        str(err.value)
        == "layer 'sep' (QuantSeparableConv2D) has a float kernel; give it a pointwise_quantizer such as 'ste_sign'"
    )
    with pytest.raises(FreezeError) as err:
        freeze(
            first(
                QuantDepthwiseConv2D(
                    3, padding="same", pad_values=0.3, input_quantizer=IN_Q, depthwise_quantizer="ste_sign", name="dw"
                )
            )
        )
    assert str(err.value) == (
        "layer 'dw' (QuantDepthwiseConv2D) pads with pad_values=0.3, which is not on the grid of its quantized input "
        "fixed<4,2,RND_CONV,SAT>; pad with a value the input quantizer can produce (e.g. 1.0 or -1.0 after a sign)"
    )
    with pytest.raises(FreezeError) as err:
        freeze(first(QuantSeparableConv2D(2, 3, depthwise_quantizer="ste_sign", pointwise_quantizer="ste_sign", name="sep")))
    assert str(err.value).startswith(
        "layer 'sep' (QuantSeparableConv2D) is the first layer and reads floats: give it a fixed-point input_quantizer"
    )


def test_a_separable_intermediate_beyond_float32_warns_and_is_recorded():
    model = keras.Sequential(
        [
            keras.Input((4, 4, 2)),
            QuantSeparableConv2D(
                1,
                3,
                input_quantizer="quantized_bits(22, 0, keep_negative=False)",
                depthwise_quantizer="quantized_bits(6, 5)",
                pointwise_quantizer="ste_sign",
                use_bias=False,
                name="sep",
            ),
        ]
    )
    model.layers[0].set_weights([np.full((3, 3, 2, 1), 20.0, np.float32), np.ones((1, 1, 2, 1), np.float32)])
    with pytest.warns(FreezeWarning, match=r"the accumulators of sep_depthwise, sep need more than 24 significant bits"):
        graph = freeze(model)
    assert graph.meta["keras_float32_exact"] is False


# ------------------------------------------------------------------------------- export, cost


def test_export_refuses_a_non_zero_pad_value_in_one_sentence(tmp_path):
    inp = input_node("in", (4, 4, 1), FixedType(2, 2))
    node = depthwise_conv2d_node("dw", inp, np.ones((3, 3, 1, 2), dtype=np.int64), WT, padding=((1, 1), (1, 1)), pad_code=1)
    with pytest.raises(EdgebnnError) as err:
        export_quietly(Graph("g", [inp, node]), tmp_path / "p", board=PYNQ)
    assert str(err.value) == (
        "graph node 'dw' (depthwise_conv2d) pads with the value 1.0 but hls4ml pads convolutions with zeros only; "
        "train it with pad_values=0 or padding='valid'"
    )


def test_the_cost_row_is_the_full_kernel_conv_and_zero_products_are_free():
    from edgebnn.estimate import estimate

    graph = depthwise_graph()
    rows = {r.name: r for r in estimate(graph, "pynq-z2").rows}
    assert rows["dw"].op == "depthwise_conv2d" and rows["dw"].detail["depth_multiplier"] == 2
    assert rows["dw"].detail["n_in"] == 3 * 3 * 2 and rows["dw"].detail["n_out"] == 4
    # Latency: the products outside each channel's block are zeros, which cost nothing
    assert rows["dw"].detail["products"]["zero"] >= 3 * 3 * 2 * 4 - 3 * 3 * 4


@pytest.mark.csim
def test_the_depthwise_graph_simulates_exactly_under_the_resource_strategy(tmp_path):
    from graphs import assert_csim_equals_emulator

    graph = depthwise_graph()
    project = export_quietly(graph, tmp_path / "p", board=PYNQ, io_type="io_stream", strategy="Resource")
    assert_csim_equals_emulator(project, graph, edge_inputs(graph, n=120))


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_pad_values_and_scaled_kernels_simulate_as_keras_computes(tmp_path, io_type):
    """larq's pad_values of 'same' depthwise and separable layers (+1 on a fixed-point input, -1 on
    a binary one) through EdgebnnPad2D nodes, with scaled kernels (XNOR-Net per channel at depth
    multiplier 2, one XNOR scale per tensor, QKeras alpha='auto' per pointwise filter): Keras =
    emulator = C-simulation, bit for bit."""
    from edgebnn.verify import verify

    model = keras.Sequential(
        [
            keras.Input((6, 6, 2)),
            QuantDepthwiseConv2D(
                3,
                depth_multiplier=2,
                padding="same",
                pad_values=1.0,
                input_quantizer=IN_Q,
                depthwise_quantizer="xnor_sign",
                name="dw",
            ),
            keras.layers.BatchNormalization(),
            QuantActivation("ste_sign"),
            QuantSeparableConv2D(
                3,
                3,
                padding="same",
                pad_values=-1.0,
                depthwise_quantizer="xnor_sign(per_channel=False)",
                pointwise_quantizer="quantized_bits(3, 1, alpha='auto')",
                name="sep",
            ),
            keras.layers.BatchNormalization(),
            QuantActivation(IN_Q),
        ]
    )
    _randomize(model, 2)
    x = _edge_x((6, 6, 2))
    adversarial_on_inputs(model, x, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model)
    pads = [n for n in graph.nodes if n.op == "pad2d"]
    assert [float(n.type.from_codes(n.attrs["pad_code"])) for n in pads] == [1.0, -1.0]
    project = export_quietly(graph, tmp_path / "p", board=PYNQ, io_type=io_type)
    report = verify(model, graph, x, project=project)
    assert report.ok and report.samples == len(x) and report.emulator_vs_csim == 0, report


# ------------------------------------------------------------------------------- scaled kernels

SCALED = [
    "xnor_sign",
    "xnor_sign(per_channel=False)",
    "xnor_sign(po2=True)",
    "magnitude_aware_sign",
    "quantized_bits(3, 1, alpha='auto')",
    "quantized_bits(3, 1, alpha='auto_po2')",
    "quantized_bits(3, 0, alpha=0.3)",
    "dorefa(2, 'weights')",
    "ternary(alpha='auto')",
]


def _scaled_model(layer):
    model = keras.Sequential([keras.Input((5, 6, 2)), layer, keras.layers.BatchNormalization(), QuantActivation(IN_Q)])
    _randomize(model, 3)
    x = _edge_x((5, 6, 2))
    adversarial_on_inputs(model, x, seed=3)
    return model, x


@pytest.mark.parametrize("kq", SCALED)
@pytest.mark.parametrize("multiplier", [1, 2])
def test_a_scaled_depthwise_kernel_is_its_codes_and_the_scale_after_the_sum(kq, multiplier):
    """XNOR-Net, magnitude-aware, QKeras alpha and DoReFa depthwise kernels: the node holds the
    integer codes, the scale (output channel c * M + m takes the scale of m) folds into the next
    thresholds; Keras = emulator, node by node."""
    model, x = _scaled_model(
        QuantDepthwiseConv2D(3, depth_multiplier=multiplier, padding="same", input_quantizer=IN_Q, depthwise_quantizer=kq)
    )
    graph = _assert_exact(model, x)
    w = graph.nodes[1].params["weight"]
    assert graph.nodes[1].op == "depthwise_conv2d" and np.issubdtype(w.dtype, np.integer)


@pytest.mark.parametrize("dq", SCALED)
@pytest.mark.parametrize("pq", ["ste_sign", "xnor_sign", "quantized_bits(3, 1, alpha='auto_po2')"])
def test_a_separable_layer_with_scaled_kernels_is_exact_or_refused_in_one_sentence(dq, pq):
    """The pointwise scale and a depthwise scale of one value follow both sums; a depthwise scale
    per channel (depth multiplier 2) sits between them: shifted into the depthwise codes when it
    is a power of two, else refused word for word."""
    for multiplier in (1, 2):
        model, x = _scaled_model(
            QuantSeparableConv2D(
                3,
                (2, 3),
                depth_multiplier=multiplier,
                input_quantizer=IN_Q,
                depthwise_quantizer=dq,
                pointwise_quantizer=pq,
                name="sep",
            )
        )
        layer = model.get_layer("sep")
        scale = layer.split_weight("depthwise_quantizer")[1]
        between = scale is not None and np.size(scale) > 1
        po2 = between and np.all(np.frexp(np.asarray(scale, np.float64))[0] == 0.5)
        if between and not po2:
            with pytest.raises(FreezeError) as err:
                freeze(model)
            assert str(err.value).startswith(
                f"layer 'sep' (QuantSeparableConv2D): its depthwise_quantizer {layer.depthwise_quantizer!r} scales each "
                "depthwise channel by ("
            )
            assert str(err.value).endswith(
                "between the depthwise and the pointwise sums, which freeze can deploy only as powers of two; use one "
                "scale per tensor (e.g. xnor_sign(axis=None)) or power-of-two scales (e.g. xnor_sign(po2=True))"
            )
        else:
            _assert_exact(model, x)
