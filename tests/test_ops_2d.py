"""The 2-D views and windows: GlobalMaxPooling2D / GlobalAveragePooling2D, averages over any number
of values (sumpool2d and its division folded into the next threshold), ZeroPadding2D and
``pad_values`` (pad2d), Reshape (reshape / flatten) and the inference no-ops, from the graph op
to Keras = emulator (edge inputs, adversarial BatchNormalization) and the refusals word for word;
a binary network with all of them (pad_values=1) C-simulates in both io types."""

import warnings

import keras
import numpy as np
import pytest
from bn import adversarial_on_inputs
from graphs import keras_edge_inputs as keras_inputs

from edgebnn.emulate import emulate
from edgebnn.errors import EdgebnnError
from edgebnn.fixed import FixedType
from edgebnn.freeze import FreezeError, freeze, trace
from edgebnn.graph import Graph, GraphError, input_node, pad2d_node, reshape_node, sumpool2d_node
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense

L = keras.layers
IN_Q = "quantized_bits(4, 0, keep_negative=False)"
T = FixedType.from_string("fixed<5,2,RND_CONV,SAT>")


# --------------------------------------------------------------------------------- graph ops
def test_sumpool2d_sums_the_codes_on_the_input_grid():
    inp = input_node("x", (7, 5, 2), T)
    node = sumpool2d_node("s", inp, (3, 2), (2, 1))
    g = Graph("g", [inp, node])
    assert node.shape == (3, 4, 2) and node.type.lsb_exp == T.lsb_exp
    assert np.array_equal(node.hi, inp.hi * 6) and np.array_equal(node.lo, inp.lo * 6)
    x = np.random.default_rng(0).uniform(-6, 6, size=(30, 7, 5, 2))
    q = T.quantize(x)
    want = np.stack(
        [np.stack([q[:, 2 * i : 2 * i + 3, j : j + 2].sum(axis=(1, 2)) for j in range(4)], axis=1) for i in range(3)], axis=1
    )
    assert np.array_equal(emulate(g, x), want)
    node.type = node.type.replace(width=node.type.width + 1, integer=node.type.integer)
    with pytest.raises(GraphError, match=r"graph node 's' \(sumpool2d\): its type .* must have the input's step 2\*\*-3"):
        Graph("g", [inp, node])


def test_reshape_is_a_row_major_view_with_bounds_per_new_channel():
    t = FixedType.from_string("fixed<8,4>")
    inp = input_node("x", (2, 3, 2), t)
    inp.params["lo"], inp.params["hi"] = np.array([-1.0, -4.0]), np.array([2.0, 3.0])
    node = reshape_node("r", inp, (3, 2, 2))
    assert np.array_equal(node.lo, [-1.0, -4.0])  # channel c stays on channel c
    other = reshape_node("r", inp, (4, 3))  # flat f -> channel f % 3, from input channel f % 2
    assert np.array_equal(other.lo, [-4.0, -4.0, -4.0]) and np.array_equal(other.hi, [3.0, 3.0, 3.0])
    x = np.random.default_rng(1).uniform(-6, 6, size=(9, 2, 3, 2))
    assert np.array_equal(emulate(Graph("g", [inp, other]), x), t.quantize(x).reshape(9, 4, 3))
    with pytest.raises(ValueError, match=r"reshape_node cannot view \(2, 3, 2\) as \(5,\)"):
        reshape_node("r", inp, (5,))


def test_pad2d_writes_its_code_and_widens_the_bounds():
    inp = input_node("x", (2, 2, 1), FixedType.from_string("ufixed<4,0>"))
    node = pad2d_node("p", inp, ((1, 0), (0, 2)), pad_code=3)
    g = Graph("g", [inp, node])
    assert node.shape == (3, 4, 1) and float(node.lo[0]) == 0.0
    out = emulate(g, np.full((1, 2, 2, 1), 0.5))
    assert np.array_equal(out[0, :, :, 0], [[3 / 16] * 4, [0.5, 0.5, 3 / 16, 3 / 16], [0.5, 0.5, 3 / 16, 3 / 16]])
    node.attrs["pad_code"] = 16
    with pytest.raises(GraphError, match=r"graph node 'p' \(pad2d\): pad_code 16 is not a code of the input type"):
        Graph("g", [inp, node])


# --------------------------------------------------------------------------------- frozen from Keras
def conv(**kw):
    args = {"padding": "same", "input_quantizer": IN_Q, "kernel_quantizer": "ste_sign", "use_bias": False} | kw
    return QuantConv2D(3, 2, name="c", **args)


def model_of(*layers, shape=(7, 7, 2), first=None):
    """The model; its kernels drawn from a fixed seed (Keras's initializers draw from the global
    random state, which the tests run before would otherwise set)."""
    model = keras.Sequential([keras.Input(shape), first or conv(), *layers])
    rng = np.random.default_rng(7)
    for layer in model.layers:
        if layer.weights and not isinstance(layer, keras.layers.BatchNormalization):
            layer.set_weights([rng.normal(size=w.shape).astype(np.float32) for w in layer.get_weights()])
    return model


def check_exact(model, x, seed=0):
    """Freeze with adversarial BatchNormalizations; Keras (batch 1 and 32, and node by node) = emulator."""
    adversarial_on_inputs(model, x, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exact: no float32 or layout caveat
        graph = freeze(model)
    emu = emulate(graph, x, return_all=True)
    for batch in (1, 32):
        ker = np.asarray(model.predict(x, batch_size=batch, verbose=0), np.float64)
        assert np.array_equal(ker.reshape(emu[graph.output.name].shape), emu[graph.output.name]), batch
    k_nodes = trace(model, x[:9])
    for node in graph.nodes:
        assert np.array_equal(np.reshape(k_nodes[node.name], (9, -1)), emu[node.name][:9].reshape(9, -1)), node.name
    return graph, emu


def q(name="q", quantizer="quantized_bits(4, 1)"):
    return QuantActivation(quantizer, name=name)


CASES = {
    # a global average over 49 values: a sum and its division folded into BN + quantizer
    "global_avg_7x7": (
        [L.GlobalAveragePooling2D(name="g"), L.BatchNormalization(name="bn"), q()],
        ["sumpool2d", "threshold", "flatten"],
    ),
    "global_avg_keepdims": (
        [L.GlobalAveragePooling2D(keepdims=True, name="g"), L.BatchNormalization(name="bn"), q()],
        ["sumpool2d", "threshold"],
    ),
    "global_avg_4x4": (
        [
            q("q0"),
            L.ZeroPadding2D(((1, 0), (0, 1)), name="z"),
            L.AveragePooling2D(2, name="a"),
            L.GlobalAveragePooling2D(name="g"),
        ],
        None,
    ),
    "global_max_moved": (
        [L.BatchNormalization(name="bn"), L.GlobalMaxPooling2D(name="g"), q(quantizer="ste_sign")],
        ["threshold", "maxpool2d", "flatten"],
    ),
    "global_max_keepdims": (  # a range the maximum of 49 values does not always saturate
        [q("q0", "quantized_bits(6, 4)"), L.GlobalMaxPooling2D(keepdims=True, name="g")],
        ["cast", "maxpool2d"],
    ),
    "avg_3x3": ([L.AveragePooling2D(3, name="a"), L.BatchNormalization(name="bn"), q()], ["sumpool2d", "threshold"]),
    "avg_3x1_overlapping": (
        [q("q0"), L.AveragePooling2D((3, 1), strides=1, name="a"), q(quantizer="quantized_bits(5, 1)")],
        ["cast", "sumpool2d", "threshold"],
    ),
    "zero_padding": ([L.ZeroPadding2D(((2, 0), (1, 1)), name="z"), L.BatchNormalization(name="bn"), q()], ["pad2d", "threshold"]),
    "reshape_moved": ([L.BatchNormalization(name="bn"), L.Reshape((49, 1, 3), name="r"), q()], ["threshold", "reshape"]),
    "reshape_mixing_on_accumulator": (
        [L.Reshape((21, 7), name="r"), L.BatchNormalization(name="bn"), q()],
        ["reshape", "threshold"],
    ),
    "reshape_flat_and_noops": (
        [
            q("q0"),
            L.SpatialDropout2D(0.3),
            L.GaussianNoise(1.0),
            L.Reshape((147,), name="r"),
            L.GaussianDropout(0.5),
            L.AlphaDropout(0.5),
            L.ActivityRegularization(0.1),
            L.Identity(),
            QuantDense(2, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False, name="d"),
            q(),
        ],
        ["cast", "flatten", "threshold", "dense", "cast"],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_keras_equals_emulator(case):
    layers, ops = CASES[case]
    model = model_of(*layers)
    x = keras_inputs(240, 5, (7, 7, 2))
    graph, emu = check_exact(model, x)
    if ops is not None:
        assert [n.op for n in graph.nodes[2:]] == ops
    assert len(np.unique(emu[graph.output.name])) > 1  # the outputs vary


def test_pad_values_one_is_a_pad2d_node_before_a_valid_conv():
    model = model_of(
        L.BatchNormalization(name="bn0"),
        QuantConv2D(
            4,
            3,
            strides=2,
            padding="same",
            pad_values=1.0,
            input_quantizer="ste_sign",
            kernel_quantizer="ste_sign",
            use_bias=False,
            name="c2",
        ),
        L.BatchNormalization(name="bn"),
        q(quantizer="ste_sign"),
    )
    graph, _ = check_exact(model, keras_inputs(240, 6, (7, 7, 2)))
    pad, c2 = graph["c2_pad"], graph["c2"]
    assert pad.op == "pad2d" and pad.attrs == {"padding": [[1, 1], [1, 1]], "pad_code": 1} and c2.inputs == ["c2_pad"]
    assert c2.attrs["padding"] == [[0, 0], [0, 0]] and c2.shape == (4, 4, 4)


def refusal(*layers, first=None):
    with pytest.raises(FreezeError) as err:
        freeze(model_of(*layers, first=first))
    return str(err.value)


def test_refusals_name_the_layer_and_the_fix():
    assert refusal(L.AveragePooling2D(3, name="a")) == (
        "the model ends with real-valued outputs of a that hardware cannot reproduce exactly; end it with a "
        "QuantActivation (e.g. quantized_bits(8, 3)) or a QuantDense"
    )
    assert refusal(L.GlobalAveragePooling2D(name="g"), QuantDense(2, kernel_quantizer="ste_sign", name="d")) == (
        "layer 'd' (QuantDense) receives real-valued inputs from g; give it an input_quantizer or insert a "
        "QuantActivation before it"
    )
    assert refusal(L.BatchNormalization(name="bn"), L.AveragePooling2D(3, name="a"), q()) == (
        "layer 'a' (AveragePooling2D) averages the real-valued outputs of bn, whose float32 mean cannot be moved "
        "past them exactly; pool after the activation (after the QuantActivation that quantizes them) or directly "
        "on the accumulator of 'c', before the normalization"
    )
    assert refusal(L.AveragePooling2D(3, padding="same", name="a"), q()) == (
        "layer 'a' (AveragePooling2D) has padding='same'; only padding='valid' can be frozen: Keras divides its "
        "border windows by the fewer values they hold"
    )
    assert refusal(L.BatchNormalization(name="bn"), L.ZeroPadding2D(1, name="z"), q()) == (
        "layer 'z' (ZeroPadding2D) pads the real-valued outputs of bn, which the graph holds only as the thresholds "
        "of their quantizer; pad after the quantizer (e.g. a QuantActivation) or directly on the accumulator, before "
        "the float ops"
    )
    assert refusal(L.ZeroPadding2D(1, name="z"), q(), first=conv(use_bias=True)) == (
        "layer 'z' (ZeroPadding2D) pads the real-valued outputs of c.bias, which the graph holds only as the "
        "thresholds of their quantizer; pad after the quantizer (e.g. a QuantActivation) or directly on the "
        "accumulator (with a quantized bias or none), before the float ops"
    )
    biased = conv(use_bias=True)
    assert refusal(L.Reshape((21, 7), name="r"), L.BatchNormalization(name="bn"), q(), first=biased) == (
        "layer 'bn' (BatchNormalization) normalizes the flattened real-valued outputs of c; quantize before 'r' "
        "(Reshape) or normalize before it"
    )
    assert refusal(q("q0"), L.Reshape((7, 7, 3, 1), name="r")) == (
        "layer 'r' (Reshape) reshapes to (7, 7, 3, 1); only shapes of one to three axes (H, W, C) can be frozen"
    )


# --------------------------------------------------------------------------------- exported
def test_io_stream_refuses_packets_that_do_not_divide(tmp_path):
    from graphs import PYNQ, export_quietly

    from edgebnn.graph import flatten_node

    inp = input_node("x", (2, 3, 2), T)
    with pytest.raises(
        EdgebnnError, match=r"graph node 'r' \(reshape\) repacks the stream from packets of 2 values into packets of 3"
    ):
        export_quietly(Graph("g", [inp, reshape_node("r", inp, (2, 2, 3))]), tmp_path / "a", board=PYNQ, io_type="io_stream")
    flat = flatten_node("f", inp)
    with pytest.raises(EdgebnnError, match=r"graph node 'r' \(reshape\) reshapes the flattened tensor of 'f'"):
        export_quietly(
            Graph("g", [inp, flat, reshape_node("r", flat, (3, 2, 2))]), tmp_path / "b", board=PYNQ, io_type="io_stream"
        )
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_cost_rows(io_type):
    from graphs import ops_2d_graph

    from edgebnn.estimate import estimate

    rows = {r.name: r for r in estimate(ops_2d_graph(), "pynq-z2", io_type=io_type).rows}
    assert rows["sum"].op == "sumpool2d" and rows["sum"].dsp == 0 and rows["sum"].detail["adder_levels"] == 4
    assert rows["gsum"].detail["adders"] == 3 * 3  # three channels of the (1, 4) window after the pool: 3 adders each
    assert rows["pad"].op == "pad2d" and rows["view"].op == "reshape"
    own = rows["pad"].lut - rows["pad"].detail.get("dataflow_channel_lut", 0)  # besides its DATAFLOW channel
    assert (own > 0) == (io_type == "io_stream")


def bnn_2d():
    """A binary network with every 2-D layer: pad_values=1, ZeroPadding2D, a 3x3 average (stride 3),
    a Reshape, a global average over 9 values, a GlobalMaxPooling2D, the inference no-ops."""
    sign = {"input_quantizer": "ste_sign", "kernel_quantizer": "ste_sign", "use_bias": False}
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            QuantConv2D(4, 3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", use_bias=False, name="c1"),
            L.BatchNormalization(name="bn1"),
            QuantConv2D(6, 3, padding="same", pad_values=1.0, name="c2", **sign),
            L.GaussianNoise(0.5),
            L.ZeroPadding2D(((1, 2), (0, 3)), name="z"),
            L.AveragePooling2D(3, name="a"),
            L.BatchNormalization(name="bn2"),
            QuantActivation("quantized_bits(4, 1)", name="q2"),
            L.Reshape((9, 1, 6), name="r"),
            L.SpatialDropout2D(0.2),
            L.GlobalAveragePooling2D(keepdims=True, name="g"),
            QuantActivation("quantized_bits(5, 1)", name="q3"),
            L.GlobalMaxPooling2D(name="gm"),
            QuantDense(4, input_quantizer="quantized_bits(4, 1)", kernel_quantizer="ste_sign", use_bias=False, name="d"),
            L.BatchNormalization(name="bn3"),
            QuantActivation("quantized_bits(6, 2)", name="out"),
        ]
    )


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_binary_network_exports_and_simulates_exactly(io_type, tmp_path):
    from graphs import PYNQ, export_quietly

    from edgebnn.verify import verify

    model = bnn_2d()
    x = keras_inputs(120, 8, (8, 8, 1))
    graph, _ = check_exact(model, x, seed=9)
    assert [n.op for n in graph.nodes] == [
        "input", "conv2d", "threshold", "pad2d", "conv2d", "pad2d", "sumpool2d", "threshold", "reshape",
        "sumpool2d", "threshold", "maxpool2d", "flatten", "cast", "dense", "threshold",
    ]  # fmt: skip
    project = export_quietly(graph, tmp_path / "p", board=PYNQ, io_type=io_type)
    project.compile()
    report = verify(model, graph, x, project=project)
    assert report.keras_vs_emulator == 0 and report.emulator_vs_csim == 0 and not report.stream_leftovers, report.describe()


def test_a_window_sum_float32_cannot_hold_is_recorded():
    from edgebnn.freeze.passes.float32_exactness import inexact

    for bits, exact in ((20, True), (22, False)):
        inp = input_node("x", (3, 3, 1), FixedType.from_string(f"fixed<{bits},2>"))
        nodes = [inp, sumpool2d_node("s", inp, (3, 3))]  # 9 values: sums of up to 9 * 2**(bits - 1) codes
        assert inexact(nodes) == ([] if exact else ["s"])
