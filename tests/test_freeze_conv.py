"""freeze of convolutional models: Keras = emulator bit for bit, padding, strides, refusals."""

import keras
import numpy as np
import pytest
from bn import adversarial_bn, set_adversarial_bn

import edgebnn  # noqa: F401
from edgebnn.emulate import emulate
from edgebnn.freeze import FreezeError, freeze, trace
from edgebnn.graph import Graph
from edgebnn.layers import QuantActivation, QuantConv2D, QuantDense
from edgebnn.verify import verify

IN_Q = "quantized_bits(4, 0, keep_negative=False)"


def assert_trace_matches_emulator(model, graph, x):
    """Keras's own trace agrees with the emulator node by node (verify can localize mismatches)."""
    k = trace(model, x)
    e = emulate(graph, x, return_all=True)
    for node in graph.nodes:
        np.testing.assert_array_equal(k[node.name], e[node.name], err_msg=node.name)
    return e


def bnn_cnn(pad1=0.0, pad2=1.0, strides=1, out_q="quantized_bits(6, 2)", first_bias=False):
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            QuantConv2D(
                4,
                3,
                padding="same",
                pad_values=pad1,
                input_quantizer=IN_Q,
                kernel_quantizer="ste_sign",
                use_bias=first_bias,
                name="c1",
            ),
            keras.layers.BatchNormalization(name="bn1"),
            QuantConv2D(
                6,
                3,
                strides=strides,
                padding="same",
                pad_values=pad2,
                input_quantizer="ste_sign",
                kernel_quantizer="ste_sign",
                use_bias=False,
                name="c2",
            ),
            keras.layers.BatchNormalization(name="bn2"),
            keras.layers.Flatten(name="flat"),
            QuantDense(5, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False, name="d"),
            keras.layers.BatchNormalization(name="bn3"),
            QuantActivation(out_q, name="out"),
        ]
    )


def bnn_cnn_acc(layer):
    """The accumulator values that reach a BatchNormalization of bnn_cnn: after the first conv
    multiples of 1/16 within +-9*15/16, after the others integers."""
    return np.arange(-9 * 15, 9 * 15 + 1) / 16 if layer.name == "bn1" else np.arange(-54, 55).astype(float)


def inputs(n, rng, shape=(8, 8, 1)):
    return (rng.integers(0, 16, size=(n, *shape)) / 16).astype(np.float32)


@pytest.mark.parametrize("seed,pad1,pad2", [(0, 0.0, 1.0), (1, 0.0, -1.0), (2, 0.5, 0.0)])
def test_bnn_cnn_keras_equals_emulator(seed, pad1, pad2):
    rng = np.random.default_rng(seed)
    model = bnn_cnn(pad1, pad2)
    set_adversarial_bn(model, rng, bnn_cnn_acc)
    graph = freeze(model)
    # a non-zero pad_values is a pad2d node before a conv2d without padding (hls4ml pads zeros only)
    pads = {name: pad for name, pad in (("c1", pad1), ("c2", pad2)) if pad}
    ops = ["input", "conv2d", "threshold", "conv2d", "threshold", "flatten", "dense", "threshold"]
    assert [n.name for n in graph.nodes if n.op == "pad2d"] == [f"{name}_pad" for name in pads]
    assert [n.op for n in graph.nodes if n.op != "pad2d"] == ops
    for name in ("c1", "c2"):
        conv = graph[name]
        if name in pads:
            pad = graph[f"{name}_pad"]
            assert conv.inputs == [pad.name] and conv.attrs["padding"] == [[0, 0], [0, 0]]
            assert pad.attrs["padding"] == [[1, 1], [1, 1]]
            assert pad.attrs["pad_code"] == int(graph[pad.inputs[0]].type.codes(np.array([pads[name]]))[0])
        else:
            assert conv.attrs["padding"] == [[1, 1], [1, 1]] and conv.attrs["pad_code"] == 0
    if "c2" in pads:
        assert graph["c2_pad"].attrs["pad_code"] == int(pad2)  # ste_sign codes are the values
    assert graph["c2_input"].params["thresholds"].shape[0] == 4  # per channel, not per pixel
    assert graph["d_input"].shape == (8, 8, 6) and graph["flat"].shape == (384,)
    assert graph.meta["keras_float32_exact"]
    x = inputs(400, rng)
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    e = assert_trace_matches_emulator(model, graph, x[:7])
    # the sign outputs are not constant (the test exercises thresholds)
    assert len(np.unique(e["c2_input"])) == 2


def test_strides_2_and_valid_padding_and_quantized_bias(tmp_path):
    rng = np.random.default_rng(7)
    model = keras.Sequential(
        [
            keras.Input((9, 7, 2)),
            QuantConv2D(
                3,
                (3, 2),
                strides=2,
                padding="same",
                input_quantizer=IN_Q,
                kernel_quantizer="ste_sign",
                bias_quantizer="quantized_bits(6, 2)",
                name="c1",
            ),
            QuantActivation("quantized_bits(8, 3)", name="q1"),  # a cast
            QuantConv2D(
                4, 2, strides=(2, 1), padding="valid", kernel_quantizer="quantized_bits(3, 1)", use_bias=False, name="c2"
            ),
            keras.layers.BatchNormalization(name="bn"),
            keras.layers.Activation("relu"),
            QuantActivation("quantized_bits(4, 1)", name="q2"),
            keras.layers.Flatten(name="flat"),
        ]
    )
    model.layers[0].bias.assign(rng.normal(size=3).astype(np.float32))
    bn = model.get_layer("bn")
    bn.set_weights(
        [np.asarray(v, np.float32) for v in (rng.normal(size=4), rng.normal(size=4), rng.normal(size=4), rng.random(4) + 0.1)]
    )
    graph = freeze(model)
    assert [n.op for n in graph.nodes] == ["input", "conv2d", "cast", "conv2d", "threshold", "flatten"]
    c1 = graph["c1"]
    assert c1.shape == (5, 4, 3) and c1.attrs["strides"] == [2, 2]
    assert c1.attrs["padding"] == [[1, 1], [0, 1]]  # TensorFlow's split: the odd pixel goes after
    assert graph["c2"].shape == (2, 3, 4) and graph["c2"].attrs["padding"] == [[0, 0], [0, 0]]
    x = inputs(300, rng, (9, 7, 2))
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    graph.save(tmp_path / "g.npz")
    np.testing.assert_array_equal(emulate(Graph.load(tmp_path / "g.npz"), x), emulate(graph, x))


def test_flatten_after_quantized_outputs_is_a_plain_flatten():
    model = keras.Sequential(
        [
            keras.Input((4, 4, 1)),
            QuantConv2D(2, 3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", use_bias=False, name="c"),
            keras.layers.BatchNormalization(),
            QuantActivation("ste_sign", name="s"),
            keras.layers.Flatten(name="flat"),
            QuantDense(3, kernel_quantizer="ste_sign", use_bias=False, name="d"),
        ]
    )
    graph = freeze(model)
    assert [n.op for n in graph.nodes] == ["input", "conv2d", "threshold", "flatten", "dense"]
    assert verify(model, graph, inputs(200, np.random.default_rng(1), (4, 4, 1))).keras_vs_emulator == 0


def _conv_model(**conv):
    kw = dict(input_quantizer=IN_Q, kernel_quantizer="ste_sign", use_bias=False, name="cv")
    kw.update(conv)
    return keras.Sequential([keras.Input((6, 6, 1)), QuantConv2D(2, 3, **kw), QuantActivation("ste_sign")])


def test_refusals_name_the_layer():
    with pytest.raises(FreezeError, match=r"layer 'cv' \(QuantConv2D\) pads with pad_values=0.3.*not on the grid"):
        freeze(_conv_model(padding="same", pad_values=0.3))
    assert freeze(_conv_model(dilation_rate=2)).nodes[1].params["weight"].shape == (5, 5, 1, 2)  # dilated: exact
    with pytest.raises(FreezeError, match=r"layer 'cv' \(QuantConv2D\) is the first layer and reads floats"):
        freeze(_conv_model(input_quantizer=None))
    with pytest.raises(FreezeError, match=r"layer 'cv' \(QuantConv2D\) has a float kernel"):
        freeze(_conv_model(kernel_quantizer=None))
    # a pad value off the grid does not matter where nothing is padded
    freeze(_conv_model(padding="valid", pad_values=0.3))


def _bn_after_flatten(use_bias):
    return keras.Sequential(
        [
            keras.Input((6, 6, 1)),
            QuantConv2D(2, 3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", use_bias=use_bias, name="c"),
            keras.layers.Flatten(name="fl"),
            keras.layers.BatchNormalization(name="bnf"),
            QuantActivation("ste_sign"),
        ]
    )


def test_batchnorm_after_flatten():
    # straight after the accumulator: the flatten node comes first, thresholds per feature, exact
    model = _bn_after_flatten(False)
    rng = np.random.default_rng(4)
    model.get_layer("bnf").set_weights(adversarial_bn(32, rng, np.arange(-9 * 15, 9 * 15 + 1) / 16))
    graph = freeze(model)
    assert [n.op for n in graph.nodes] == ["input", "conv2d", "flatten", "threshold"]
    assert verify(model, graph, inputs(300, rng, (6, 6, 1))).keras_vs_emulator == 0
    # behind a float bias the Flatten would have to move across a per-feature normalization
    with pytest.raises(FreezeError, match=r"layer 'bnf' \(BatchNormalization\) normalizes the flattened.*'fl'"):
        freeze(_bn_after_flatten(True))


def test_strided_bnn_cnn_under_jit():
    rng = np.random.default_rng(3)
    model = bnn_cnn(0.0, -1.0, strides=2)
    set_adversarial_bn(model, rng, bnn_cnn_acc)
    model.compile(jit_compile=True)
    graph = freeze(model)
    assert graph["c2"].shape == (4, 4, 6) and graph["c2"].attrs["strides"] == [2, 2]
    assert graph["c2_pad"].attrs["padding"] == [[0, 1], [0, 1]]  # TensorFlow's "same" split for stride 2
    report = verify(model, graph, inputs(300, rng))
    assert report.keras_vs_emulator == 0, report.describe()


# ------------------------------------------------------------------------------ max pooling


def pooled_bnn_cnn():
    """Pooling in the three allowed places: between BN and the quantizer (larq's order: moved after
    the quantizer), directly on an accumulator, and on a quantized tensor (overlapping, stride 1)."""
    return keras.Sequential(
        [
            keras.Input((9, 9, 1)),
            QuantConv2D(4, 3, padding="same", input_quantizer=IN_Q, kernel_quantizer="ste_sign", use_bias=False, name="c1"),
            keras.layers.BatchNormalization(name="bn1"),
            keras.layers.MaxPooling2D(2, name="p1"),  # 9x9 -> 4x4: floor, the last row/column dropped
            QuantConv2D(6, 2, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False, name="c2"),
            keras.layers.MaxPooling2D((2, 1), strides=1, name="p2"),  # on the accumulator
            keras.layers.BatchNormalization(name="bn2"),
            QuantActivation("ste_sign", name="s2"),
            keras.layers.MaxPooling2D(2, strides=1, name="p3"),  # on a quantized tensor
            keras.layers.Flatten(name="flat"),
            QuantDense(5, kernel_quantizer="ste_sign", use_bias=False, name="d"),
            keras.layers.BatchNormalization(name="bn3"),
            QuantActivation("quantized_bits(6, 2)", name="out"),
        ]
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pooled_bnn_cnn_keras_equals_emulator(seed):
    rng = np.random.default_rng(seed)
    keras.utils.set_random_seed(seed)  # the kernels too: the variety checked below depends on them
    model = pooled_bnn_cnn()
    # before the moved pool: gammas of both signs, means on accumulator values (ties at zero)
    bn1 = model.get_layer("bn1")
    bn1.set_weights(
        [
            np.asarray(v, np.float32)
            for v in (
                rng.permutation([1.0, -1.0, 0.37, -2.5]),
                rng.choice([0.0, -0.0, 1e-7], 4),
                rng.integers(-24, 25, size=4) / 16,
                rng.choice([1.0, 0.3, 2.0**-6, 7.0], 4),
            )
        ]
    )
    for name in ("bn2", "bn3"):  # plain random ones, so the later signs vary
        c = model.get_layer(name).gamma.shape[0]
        model.get_layer(name).set_weights(
            [
                np.asarray(v, np.float32)
                for v in (rng.normal(size=c), rng.normal(size=c) * 0.3, rng.integers(-3, 4, size=c), rng.random(c) + 0.5)
            ]
        )
    graph = freeze(model)
    assert [(n.name, n.op) for n in graph.nodes] == [
        ("input", "input"),
        ("c1", "conv2d"),
        ("c2_input", "threshold"),
        ("p1", "maxpool2d"),
        ("c2", "conv2d"),
        ("p2", "maxpool2d"),
        ("s2", "threshold"),
        ("p3", "maxpool2d"),
        ("flat", "flatten"),
        ("d", "dense"),
        ("out", "threshold"),
    ]
    assert graph["p1"].shape == (4, 4, 4) and graph["p1"].type == graph["c2_input"].type
    assert graph["p2"].shape == (2, 3, 6) and graph["p2"].type == graph["c2"].type
    assert graph["p3"].shape == (1, 2, 6) and graph["p3"].attrs == {"pool": [2, 2], "strides": [1, 1]}
    # some first-layer channels have a negative gamma: decreasing levels, moved exactly all the same
    lv = graph["c2_input"].params["levels"]
    assert (lv[:, -1] < lv[:, 0]).any()
    x = inputs(400, rng, (9, 9, 1))
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    assert_trace_matches_emulator(model, graph, x[:9])
    # the pooled sign maps vary from sample to sample (the test exercises the pools)
    e = emulate(graph, x, return_all=True)
    assert len(np.unique(e["p1"].reshape(len(x), -1), axis=0)) > 10
    assert len(np.unique(e["p3"])) == 2


def _pool_before_decreasing_bn(float_bias, gamma):
    model = keras.Sequential(
        [
            keras.Input((6, 6, 1)),
            QuantConv2D(2, 3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", use_bias=float_bias, name="c"),
            keras.layers.MaxPooling2D(2, name="mp"),
            keras.layers.BatchNormalization(name="bn"),
            QuantActivation("ste_sign", name="s"),
        ]
    )
    model.get_layer("bn").set_weights([np.asarray(v, np.float32) for v in (gamma, [0.1, -0.2], [0.3, -0.5], [1.0, 2.0])])
    if float_bias:
        model.get_layer("c").bias.assign(np.asarray([0.25, -0.5], np.float32))
    return model


def test_pool_moved_across_a_decreasing_requantization_is_refused():
    # behind a float bias the pool sits between the accumulator's float ops and a BN whose negative
    # gamma makes the requantization decreasing: max does not commute with it
    with pytest.raises(
        FreezeError,
        match=r"layer 'mp' \(MaxPooling2D\) sits between c\.bias and the quantizer "
        r"of 's'.*decreases in channel\(s\) \[1\].*pool after the activation",
    ):
        freeze(_pool_before_decreasing_bn(True, [1.0, -1.5]))
    # with increasing BNs the move is exact
    rng = np.random.default_rng(5)
    model = _pool_before_decreasing_bn(True, [1.0, 1.5])
    graph = freeze(model)
    assert [n.op for n in graph.nodes] == ["input", "conv2d", "threshold", "maxpool2d"]
    assert verify(model, graph, inputs(300, rng, (6, 6, 1))).keras_vs_emulator == 0
    # without the bias the pool is on the accumulator itself: exact whatever the gamma
    model = _pool_before_decreasing_bn(False, [1.0, -1.5])
    graph = freeze(model)
    assert [n.op for n in graph.nodes] == ["input", "conv2d", "maxpool2d", "threshold"]
    assert verify(model, graph, inputs(300, rng, (6, 6, 1))).keras_vs_emulator == 0


def test_pool_moved_across_a_relu_cast():
    """conv -> relu -> MaxPool -> fixed-point quantizer: a cast (relu, saturating conversion), which is
    non-decreasing, so the pool moves after it exactly."""
    model = keras.Sequential(
        [
            keras.Input((6, 6, 1)),
            QuantConv2D(2, 3, input_quantizer=IN_Q, kernel_quantizer="ste_sign", use_bias=False, name="c"),
            keras.layers.Activation("relu", name="r"),
            keras.layers.MaxPooling2D(2, name="mp"),
            QuantActivation("quantized_bits(3, 1)", name="q"),
        ]
    )
    graph = freeze(model)
    assert [n.op for n in graph.nodes] == ["input", "conv2d", "cast", "maxpool2d"]
    x = inputs(300, np.random.default_rng(2), (6, 6, 1))
    assert verify(model, graph, x).keras_vs_emulator == 0
    assert len(np.unique(emulate(graph, x))) > 2
