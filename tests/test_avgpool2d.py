"""AveragePooling2D end to end: the graph op (exact means on a finer grid), its cost, its hls4ml
export (C-simulation = emulator in io_parallel and io_stream) and its freeze from Keras."""

import numpy as np
import pytest
from graphs import fuzz_cases

from edgebnn.emulate import emulate
from edgebnn.estimate import estimate
from edgebnn.fixed import FixedType
from edgebnn.graph import Graph, GraphError, avgpool2d_node, input_node


def pooled_graph(pool=(2, 2), strides=None, shape=(6, 4, 3), t="fixed<5,2,RND_CONV,SAT>"):
    inp = input_node("x", shape, FixedType.from_string(t))
    return Graph("avg", [inp, avgpool2d_node("avg", inp, pool, strides)])


@pytest.mark.parametrize("pool,strides", [((2, 2), None), ((2, 1), (1, 1)), ((1, 4), (2, 1)), ((4, 2), (1, 2)), ((1, 1), None)])
def test_means_are_exact_on_a_finer_grid(pool, strides):
    g = pooled_graph(pool, strides)
    t = g.input.type
    k = int(np.log2(pool[0] * pool[1]))
    assert g.output.type.lsb_exp == t.lsb_exp - k
    x = np.random.default_rng(0).uniform(-6, 6, size=(40, 6, 4, 3))
    q = t.quantize(x)
    sh, sw = strides or pool
    ho, wo = (6 - pool[0]) // sh + 1, (4 - pool[1]) // sw + 1
    want = np.stack(
        [
            np.stack([q[:, i * sh : i * sh + pool[0], j * sw : j * sw + pool[1]].mean(axis=(1, 2)) for j in range(wo)], axis=1)
            for i in range(ho)
        ],
        axis=1,
    )
    got = emulate(g, x)
    assert got.shape == (40, ho, wo, 3)
    assert np.array_equal(got, want)  # a mean of 2**k values on one grid is exact in float64 too
    assert g.output.type.contains(got)


def test_a_window_that_is_not_a_power_of_two_is_refused():
    inp = input_node("x", (6, 6, 1), FixedType.from_string("fixed<5,2>"))
    with pytest.raises(ValueError, match="power of two"):
        avgpool2d_node("avg", inp, (3, 3))
    node = avgpool2d_node("avg", inp, (2, 2))
    node.attrs["pool"] = [3, 3]
    with pytest.raises(GraphError, match=r"graph node 'avg' \(avgpool2d\): a 3x3 window does not hold a power of two"):
        Graph("g", [inp, node])


def test_a_type_off_the_mean_grid_is_refused():
    g = pooled_graph()
    node = g.output
    node.type = g.input.type
    with pytest.raises(GraphError, match="step of 2\\*\\*-5"):
        Graph("g", g.nodes)


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_cost_is_adders_without_dsp(io_type):
    row = next(r for r in estimate(pooled_graph(), "pynq-z2", io_type=io_type).rows if r.op == "avgpool2d")
    assert row.dsp == 0 and row.lut > 0
    assert row.detail["adders"] == (3 if io_type == "io_stream" else 3 * 2 * 3) * 3  # 3 adders per 2x2 window
    bigger = next(
        r for r in estimate(pooled_graph((4, 4), shape=(8, 8, 3)), "pynq-z2", io_type=io_type).rows if r.op == "avgpool2d"
    )
    assert bigger.lut > row.lut


# --------------------------------------------------------------- exported and compiled once per graph
# (the conftest fixture `compiled` gives (name, graph, project) for each)
def pooled_chain(pool, strides=None, cast=None, shape=(6, 4, 3), t="fixed<5,2,RND_CONV,SAT>"):
    from edgebnn.graph import cast_node

    g = pooled_graph(pool, strides, shape, t)
    if cast is None:
        return g
    return Graph("avg_cast", [*g.nodes, cast_node("q", g.output, FixedType.from_string(cast), relu=True)])


CASES = {
    "parallel": (lambda: pooled_graph(), {}),
    "stream": (lambda: pooled_graph(), {"io_type": "io_stream"}),
    # overlapping windows, then a rounding, saturating relu cast of the means
    "overlap_cast": (lambda: pooled_chain((2, 1), (1, 1), cast="ufixed<3,1,RND,SAT>"), {}),
    "overlap_stream": (lambda: pooled_chain((2, 2), (1, 2), cast="ufixed<3,1,RND,SAT>"), {"io_type": "io_stream"}),
    "wide_stream_cast": (
        lambda: pooled_chain((4, 2), (4, 2), cast="fixed<4,1,RND_ZERO,SAT_SYM>", shape=(8, 6, 2), t="ufixed<6,3,RND,SAT>"),
        {"io_type": "io_stream"},
    ),
    "resource": (lambda: pooled_graph((1, 2)), {"strategy": "Resource", "reuse_factor": 2}),
}


def test_csim_equals_emulator(compiled):
    from graphs import assert_csim_equals_emulator, edge_inputs

    _, graph, project = compiled
    assert_csim_equals_emulator(project, graph, edge_inputs(graph, n=200))


def test_overlapping_windows_are_edgebnn_pools():
    """hls4ml's io_stream Pooling2D asserts strides equal to the pool: strides other than the pool
    are edgebnn's EdgebnnPool2D in both io types (hls4ml's own array pooling inside)."""
    from edgebnn.backends.hls4ml.ops import avgpool2d

    assert avgpool2d.hls_class(pooled_graph((2, 1), (1, 1))["avg"]) == "EdgebnnPool2D"
    assert avgpool2d.hls_class(pooled_graph()["avg"]) == "Pooling2D"


# --------------------------------------------------------------- frozen from Keras
IN_Q = "quantized_bits(4, 0, keep_negative=False)"


def keras_pooled(where, out_q, strides=1):
    """conv -> [BN -> 3-bit QuantActivation] -> 2x2 average -> BN -> ``out_q`` -> a second average
    (overlapping with ``strides=1``) -> Flatten -> QuantDense (its input quantizer requantizes the
    means) -> BN -> 6-bit output. ``where``: the first average after the quantizer or directly on
    the conv2d accumulator."""
    import keras

    from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense

    first = [keras.layers.BatchNormalization(name="bn0"), QuantActivation("quantized_bits(3, 1)", name="q0")]
    return keras.Sequential(
        [
            keras.Input((8, 8, 2)),
            QuantConv2D(6, 3, padding="same", input_quantizer=IN_Q, kernel_quantizer="ste_sign", use_bias=False, name="c1"),
            *(first if where == "after_quantizer" else []),
            keras.layers.AveragePooling2D(2, name="a1"),
            keras.layers.BatchNormalization(name="bn1"),
            QuantActivation(out_q, name="q1"),
            keras.layers.AveragePooling2D((2, 1), strides=strides, name="a2"),
            keras.layers.Flatten(name="flat"),
            QuantDense(4, input_quantizer="quantized_bits(3, 0)", kernel_quantizer="ste_sign", use_bias=False, name="d"),
            keras.layers.BatchNormalization(name="bn2"),
            QuantActivation("quantized_bits(6, 2)", name="out"),
        ]
    )


def keras_inputs(n, seed, shape=(8, 8, 2)):
    from graphs import keras_edge_inputs

    return keras_edge_inputs(n, seed, shape)


def adversarial(model, x, seed):
    from bn import adversarial_on_inputs

    adversarial_on_inputs(model, x, seed, plain="bn2")


@pytest.mark.parametrize("where", ["after_quantizer", "on_accumulator"])
@pytest.mark.parametrize("out_q", ["ste_sign", "quantized_bits(4, 1)"])
def test_keras_average_pooling_freezes_exactly(where, out_q):
    from edgebnn.freeze import freeze, trace

    model = keras_pooled(where, out_q)
    x = keras_inputs(200, 1)
    adversarial(model, x, 2)
    graph = freeze(model)
    ops = [(n.name, n.op) for n in graph.nodes]
    head = (
        [("c1", "conv2d"), ("q0", "threshold"), ("a1", "avgpool2d")]
        if where == "after_quantizer"
        else [("c1", "conv2d"), ("a1", "avgpool2d")]
    )
    assert ops == [
        ("input", "input"),
        *head,
        ("q1", "threshold"),
        ("a2", "avgpool2d"),
        ("flat", "flatten"),
        ("d_input", "cast"),
        ("d", "dense"),
        ("out", "threshold"),
    ]
    assert graph.meta["keras_float32_exact"] and not graph.meta["keras_caveats"]
    emu = emulate(graph, x, return_all=True)
    for batch in (1, 32):
        ker = np.asarray(model.predict(x, batch_size=batch, verbose=0), np.float64)
        assert np.array_equal(ker, emu["out"]), batch
    k_nodes = trace(model, x)  # Keras node by node: verify can locate a mismatch at an average
    for node in graph.nodes:
        assert np.array_equal(k_nodes[node.name], emu[node.name]), node.name
    assert len(np.unique(emu["a1"])) > 8 and len(np.unique(emu["a2"])) > 2  # the means vary
    assert len(np.unique(emu["out"], axis=0)) > 10  # and so do the outputs


def test_a_mean_whose_window_sum_float32_cannot_hold_is_recorded():
    from edgebnn.freeze.passes.float32_exactness import inexact

    for bits, exact in ((20, True), (23, False)):
        inp = input_node("x", (4, 4, 1), FixedType.from_string(f"fixed<{bits},2>"))
        nodes = [inp, avgpool2d_node("avg", inp, (4, 4))]  # 16 values: sums of up to 2**(bits - 1 + 4) codes
        assert inexact(nodes) == ([] if exact else ["avg"])


def refused(layers):
    import keras

    from edgebnn.freeze import FreezeError, freeze
    from edgebnn.layers import QuantActivation, QuantConv2D

    model = keras.Sequential([keras.Input((6, 6, 1)), *layers(QuantConv2D), QuantActivation("ste_sign", name="s")])
    with pytest.raises(FreezeError) as err:
        freeze(model)
    return str(err.value)


def test_refusals_name_the_layer_and_the_fix():
    import keras

    def conv(cls, **kw):
        return cls(2, 3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", name="c", **({"use_bias": False} | kw))

    # a 3x3 window is a sum and a division that the next quantizer absorbs: an average of it is among float ops
    assert refused(
        lambda c: [conv(c), keras.layers.AveragePooling2D(3, name="ap"), keras.layers.AveragePooling2D(1, name="a2")]
    ) == (
        "layer 'a2' (AveragePooling2D) averages the real-valued outputs of ap (division by 9), whose float32 mean "
        "cannot be moved past them exactly; pool after the activation (after the QuantActivation that quantizes "
        "them) or directly on the accumulator of 'c', before the normalization"
    )
    assert refused(lambda c: [conv(c), keras.layers.AveragePooling2D(2, padding="same", name="ap")]) == (
        "layer 'ap' (AveragePooling2D) has padding='same'; only padding='valid' can be frozen: Keras divides its "
        "border windows by the fewer values they hold"
    )
    assert refused(
        lambda c: [conv(c), keras.layers.BatchNormalization(name="bn"), keras.layers.AveragePooling2D(2, name="ap")]
    ) == (
        "layer 'ap' (AveragePooling2D) averages the real-valued outputs of bn, whose float32 mean cannot be moved "
        "past them exactly; pool after the activation (after the QuantActivation that quantizes them) or directly "
        "on the accumulator of 'c', before the normalization"
    )
    assert refused(lambda c: [conv(c, use_bias=True), keras.layers.AveragePooling2D(2, name="ap")]) == (
        "layer 'ap' (AveragePooling2D) averages the real-valued outputs of c.bias, whose float32 mean cannot be "
        "moved past them exactly; pool after the activation (after the QuantActivation that quantizes them) or "
        "directly on the accumulator of 'c' (with a quantized bias or none), before the normalization"
    )
    # behind a MaxPooling2D that would move after the quantizer, the average is still among the float ops
    assert refused(
        lambda c: [
            conv(c),
            keras.layers.BatchNormalization(name="bn"),
            keras.layers.MaxPooling2D(1, name="mp"),
            keras.layers.AveragePooling2D(2, name="ap"),
        ]
    ).startswith("layer 'ap' (AveragePooling2D) averages the real-valued outputs of bn,")


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_verify_end_to_end(io_type, tmp_path):
    from graphs import csim_verified

    from edgebnn.freeze import freeze

    model = keras_pooled("on_accumulator", "ste_sign", strides=(2, 1))  # io_stream: strides = pool
    x = keras_inputs(100, 3)
    adversarial(model, x, 4)
    report = csim_verified(model, freeze(model), x, tmp_path / "prj", io_type)
    assert (report.samples, report.keras_vs_emulator, report.emulator_vs_csim) == (100, 0, 0), report.describe()


def test_fuzzed_models_hold_average_pools_that_freeze():
    from edgebnn import fuzz

    cases = fuzz_cases(lambda layers: any(line.startswith("AveragePooling2D") for line in layers), 6)
    outcomes = [fuzz.check(case) for case in cases]
    assert not [o for o in outcomes if o.status in ("mismatch", "crash")], [o.line() for o in outcomes]
    assert [o.status for o in outcomes].count("ok") >= 3, [o.line() for o in outcomes]
