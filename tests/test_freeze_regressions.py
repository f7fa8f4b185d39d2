"""Defects the random-model fuzzer found in freeze, each held by its minimal case (issue 8)."""

import warnings

import keras
import numpy as np
import pytest

from edgebnn import emulate, load_model
from edgebnn.fixed import FixedType
from edgebnn.freeze import FreezeError, FreezeWarning, freeze
from edgebnn.graph import Graph, cast_node, conv2d_node, input_node
from edgebnn.layers import QuantActivation, QuantConv1D, QuantConv2D, QuantDense, QuantDepthwiseConv2D


def small(quantizer, first="quantized_bits(4, 2)", units=2, **dense):
    return keras.Sequential(
        [
            keras.Input((3,)),
            QuantDense(units, input_quantizer=first, kernel_quantizer="ste_sign", use_bias=False, **dense),
            QuantActivation(quantizer, name="act"),
        ]
    )


@pytest.mark.parametrize(
    "quantizer, words",
    [
        ("partial('ste_sign', [0])", "real-valued"),  # D2: no `other`
        ("ste_tern(ternary_weight_networks=True)", "statistics of each batch"),  # D4
        ("noop(8)", "NoOp"),
        ("quantized_relu(4, 2, relu_upper_bound=1.3, is_quantized_clip=False)", "off its grid"),
    ],
)
def test_undeployable_activation_quantizer_is_refused_by_layer(quantizer, words):
    with pytest.raises(FreezeError) as err:
        freeze(small(quantizer))
    msg = str(err.value)
    assert "'act' (QuantActivation)" in msg and words in msg and "\n" not in msg


def test_partial_input_quantizer_without_other_is_refused_by_layer():
    model = keras.Sequential(
        [
            keras.Input((3,)),
            QuantDense(3, input_quantizer="quantized_bits(4, 2)", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
            QuantDense(2, input_quantizer="partial('ste_sign', [1])", kernel_quantizer="ste_sign", name="second"),
            QuantActivation("ste_sign"),
        ]
    )
    with pytest.raises(FreezeError, match=r"'second' \(QuantDense\): its input_quantizer .* real-valued"):
        freeze(model)


def test_noop_kernel_is_refused_by_layer():
    model = keras.Sequential(
        [
            keras.Input((3,)),
            QuantDense(2, input_quantizer="quantized_bits(4, 2)", kernel_quantizer="noop(8)", use_bias=False, name="d"),
        ]
    )
    with pytest.raises(FreezeError, match=r"layer 'd' \(QuantDense\): its kernel_quantizer cannot be deployed: NoOp"):
        freeze(model)


def test_ternary_activation_with_fixed_threshold_still_freezes():
    graph = freeze(small("ste_tern(threshold_value=0.5)"))
    assert graph.output.op == "threshold"


def test_partial_quantizer_after_flatten_of_real_values_is_refused():
    """Keras applies a channel-choosing quantizer to the flattened features; freeze can only
    requantize the un-flattened tensor per channel, so it must refuse, not move the Flatten."""
    model = keras.Sequential(
        [
            keras.Input((2, 2, 2)),
            QuantConv2D(2, (1, 1), input_quantizer="quantized_bits(4, 2)", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.Flatten(name="flat"),
            QuantDense(
                2,
                input_quantizer="partial('ste_sign', [0], other='quantized_bits(4, 1)')",
                kernel_quantizer="ste_sign",
                use_bias=False,
                name="d",
            ),
            QuantActivation("ste_sign"),
        ]
    )
    with pytest.raises(FreezeError, match=r"'d' \(QuantDense\).*before 'flat' \(Flatten\)"):
        freeze(model)


_CAST_CASES = [
    ("fixed<10,6,TRN,SAT>", "fixed<6,0,RND,{}>"),  # [-0.5, 0.484375]: overflows both ways
    ("fixed<10,6,TRN,SAT>", "ufixed<2,0,RND_MIN_INF,{}>"),
    ("fixed<4,0,TRN,SAT>", "ufixed<2,0,RND_MIN_INF,{}>"),  # only below 0 (a fuzz case: a wrap missed)
]


@pytest.mark.parametrize(
    "overflow, src_type, out_type",
    [
        (o, s, t)
        for s, t in _CAST_CASES
        for o in ("SAT", "SAT_SYM", "SAT_ZERO", "WRAP")
        if not (o == "SAT_SYM" and t.startswith("u"))
    ],
)  # SAT_SYM is for signed types
def test_cast_bounds_hold_every_value_the_conversion_gives(overflow, src_type, out_type):
    """D5: SAT_ZERO sent both overflowing ends to 0 and the bounds became [0, 0]; an unsigned
    target did not see values below 0 overflow, so WRAP kept the bounds of the unwrapped values."""
    src = input_node("x", (1,), FixedType.from_string(src_type))
    out_type = FixedType.from_string(out_type.format(overflow))
    node = cast_node("c", src, out_type, relu=False)
    values = np.arange(src.type.min_code, src.type.max_code + 1) * 2.0**src.type.lsb_exp
    got = out_type.quantize(values)
    assert node.lo[0] <= got.min() and got.max() <= node.hi[0]
    if overflow in ("SAT", "SAT_SYM"):  # monotone: the bounds are the converted ends
        assert (node.lo[0], node.hi[0]) == (got.min(), got.max())


def test_sat_zero_cast_feeds_an_exact_accumulator():
    """D5's fuzz case: conv -> quantized_bits(6, 0, SAT_ZERO) -> 1x1 conv; the second
    accumulator was typed from bounds [0, 0] and wrapped."""
    x_type = FixedType.from_string("fixed<10,6,TRN,SAT>")
    src = input_node("x", (3, 3, 1), x_type)
    cast = cast_node("c", src, FixedType.from_string("fixed<6,0,RND_ZERO,SAT_ZERO>"), relu=False)
    conv = conv2d_node("k", cast, np.array([[[[-7]]]]), FixedType.from_string("fixed<4,1,RND_CONV,SAT>"))
    graph = Graph("g", [src, cast, conv])
    x = np.linspace(-40, 40, 9 * 64).reshape(64, 3, 3, 1)
    want = cast.type.quantize(x_type.quantize(x)) * -7 * 2.0**-3
    assert np.array_equal(emulate(graph, x), want)


def _sigmoid_model(jit):
    model = keras.Sequential(
        [
            keras.Input((3,)),
            QuantDense(1, input_quantizer="quantized_bits(4, 2)", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.Activation("sigmoid", name="sig"),
            QuantActivation("quantized_relu(2, 2)", name="q"),
        ]
    )
    # gamma 0: the normalized value is beta = 1e-7 for every input, and sigmoid(1e-7) is 0.5 in
    # TensorFlow's vectorized path but 0.50000006 in its scalar path: a tie of the quantizer
    model.layers[1].set_weights([np.float32([0.0]), np.float32([1e-7]), np.float32([0.0]), np.float32([1.0])])
    model.compile(jit_compile=jit)
    return model


def test_layout_dependent_activation_is_recorded_and_warned():
    """D8: Keras's own result depends on the tensor layout; freeze says so by node."""
    model = _sigmoid_model(jit=False)
    with pytest.warns(FreezeWarning, match="sigmoid in 'sig'.*batch layout"):
        graph = freeze(model)
    caveats = graph.meta["keras_caveats"]
    assert [(c["node"], c["kind"]) for c in caveats] == [("q", "layout")]
    x = np.zeros((40, 3), dtype=np.float32)
    one, many = model.predict(x, batch_size=1, verbose=0), model.predict(x, batch_size=40, verbose=0)
    assert not np.array_equal(one, many)  # Keras disagrees with itself, as recorded
    assert np.array_equal(emulate(graph, x), many)  # the graph follows the vectorized result


def test_layout_stable_activation_records_nothing():
    model = _sigmoid_model(jit=False)
    model.layers[1].set_weights([np.float32([1.0]), np.float32([0.3]), np.float32([0.5]), np.float32([1.0])])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FreezeWarning)
        graph = freeze(model)
    assert graph.meta["keras_caveats"] == []


def test_activation_fused_into_the_matmul_near_a_step_is_recorded_and_warned():
    """Fuzz seed 309: model.predict runs a convolution, its float bias and elu as one fused kernel
    whose elu differs by an ulp from elu alone; a BatchNormalization mean exactly on elu's value
    put a quantization step there. freeze says so by node; eager Keras equals the graph."""
    model = keras.Sequential(
        [
            keras.Input((3,)),
            QuantDense(
                2,
                input_quantizer="quantized_bits(4, 0, keep_negative=False)",
                kernel_quantizer="ste_sign",
                activation="elu",
                name="d",
            ),
            keras.layers.BatchNormalization(name="bn"),
            QuantActivation("ste_heaviside", name="q"),
        ]
    )
    d = model.get_layer("d")
    d.set_weights([np.float32([[1, -1], [1, 1], [-1, 1]]), np.float32([0.1, -0.3])])
    acc = np.float32(0.5 - 0.1875)  # one value the accumulator takes (inputs on the 1/16 grid)
    mean = keras.ops.convert_to_numpy(keras.activations.elu(keras.ops.convert_to_tensor(np.float32([acc + 0.1]))))[0]
    model.get_layer("bn").set_weights(
        [np.float32([-1, 1]), np.float32([1e-7, 0.0]), np.float32([mean, 0.0]), np.float32([0.3, 1.0])]
    )
    with pytest.warns(FreezeWarning, match=r"elu in 'd.activation' may run fused into the dense of 'd'"):
        graph = freeze(model)
    assert [(c["node"], c["kind"]) for c in graph.meta["keras_caveats"]] == [("q", "fused")]
    x = np.random.default_rng(0).integers(0, 16, size=(64, 3)) / 16
    assert np.array_equal(emulate(graph, x), keras.ops.convert_to_numpy(model(x.astype(np.float32), training=False)))


def test_mish_that_predict_computes_otherwise_than_eager_keras_is_recorded_and_warned():
    """Fuzz seed 36003: model.predict runs mish as oneDNN's fused kernel, -0.0 at an accumulator
    of -26, where eager mish gives -2e-12 (x * tanh(softplus(x))); a quantizer that rounds down
    makes that code -1 instead of 0. freeze says so by node; the graph follows model.predict."""
    model = keras.Sequential(
        [
            keras.Input((3,)),
            QuantDense(2, input_quantizer="quantized_bits(6, 5)", kernel_quantizer="ste_sign", use_bias=False, name="d"),
            keras.layers.Activation("mish", name="mish"),
            QuantActivation("quantized_bits(6, 0, keep_negative=True, rounding='TRN')", name="q"),
        ]
    )
    model.get_layer("d").set_weights([np.float32([[1, -1], [1, 1], [1, 1]])])
    with pytest.warns(FreezeWarning, match=r"mish in 'mish' gives other float32 results in model.predict"):
        graph = freeze(model)
    assert ("q", "eager") in [(c["node"], c["kind"]) for c in graph.meta["keras_caveats"]]
    x = np.float32([[-9, -9, -8], [1, 2, 3]])
    emu = emulate(graph, x)
    assert np.array_equal(emu, model.predict(x, batch_size=2, verbose=0))  # the graph follows model.predict
    assert not np.array_equal(emu, keras.ops.convert_to_numpy(model(x, training=False)))  # eager Keras differs, as recorded


def test_piecewise_linear_activation_after_the_matmul_records_nothing():
    model = keras.Sequential(
        [
            keras.Input((3,)),
            QuantDense(
                2,
                input_quantizer="quantized_bits(4, 0, keep_negative=False)",
                kernel_quantizer="ste_sign",
                activation="relu",
                name="d",
            ),
            keras.layers.BatchNormalization(name="bn"),
            QuantActivation("ste_heaviside", name="q"),
        ]
    )
    model.get_layer("d").set_weights([np.float32([[1, -1], [1, 1], [-1, 1]]), np.float32([0.1, -0.3])])
    model.get_layer("bn").set_weights(
        [np.float32([-1, 1]), np.float32([1e-7, 0.0]), np.float32([0.4125, 0.0]), np.float32([0.3, 1.0])]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", FreezeWarning)
        graph = freeze(model)
    assert graph.meta["keras_caveats"] == []


def test_float_bias_under_xla_is_one_number(xla_allowed, tmp_path):
    """D6: XLA at batch size 1 folded a float bias into the dot product, so predict differed
    from the exact sum plus the bias that the graph deploys; the layers now add it to the exact
    sum in every path: no caveat, and eager Keras, predict at every batch size and the model
    loaded back all equal the emulator."""
    rng = np.random.default_rng(0)
    model = keras.Sequential(
        [
            keras.Input((40,)),
            QuantDense(16, input_quantizer="quantized_bits(6, 5)", kernel_quantizer="ste_sign", name="d"),
            QuantActivation("quantized_bits(8, 7)"),
        ]
    )
    model.layers[0].set_weights(
        [rng.normal(size=(40, 16)).astype("float32"), (rng.normal(size=16) * 10 + 1 / 3).astype("float32")]
    )
    model.compile(jit_compile=True)
    assert model.jit_compile
    with warnings.catch_warnings():
        warnings.simplefilter("error", FreezeWarning)
        graph = freeze(model)
    assert graph.meta["keras_caveats"] == []
    x = np.round(rng.normal(size=(500, 40)) * 8).astype("float32")
    emu = emulate(graph, x)
    model.save(tmp_path / "m.keras")
    loaded = load_model(tmp_path / "m.keras")
    assert loaded.jit_compile
    for keras_model in (model, loaded):
        assert np.array_equal(np.asarray(keras_model(x), dtype=np.float64), emu)
        for batch in (1, 7, 32, 500):
            assert np.array_equal(np.asarray(keras_model.predict(x, batch_size=batch, verbose=0), dtype=np.float64), emu)


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda p: QuantConv2D(2, (1, 3), strides=(1, 2), padding=p, **_CONV_Q), (4, 3, 1)),
        (lambda p: QuantConv2D(1, (3, 2), strides=(3, 2), padding=p, pad_values=1.0, **_CONV_Q), (3, 5, 2)),
        (lambda p: QuantConv1D(2, 3, strides=2, padding=p, **_CONV_Q), (3, 2)),
        (
            lambda p: QuantDepthwiseConv2D(
                (2, 2), strides=2, padding=p, input_quantizer="quantized_bits(6, 4)", depthwise_quantizer="quantized_bits(4, 1)"
            ),
            (2, 2, 3),
        ),
    ],
)
@pytest.mark.parametrize("padding", ["valid", "same"])
def test_convolution_with_one_output_window_and_a_stride_is_right_for_a_batch(make, shape, padding):
    """TensorFlow's oneDNN convolution gets an axis with one output window and a stride above 1
    wrong for batches of more than one sample; the layers cut the input to that window."""
    if padding == "valid" and isinstance(make(padding), QuantConv2D) and shape[1] == 5:
        padding = "same"  # (3, 2) over 3 rows and stride 3: one window in both paddings
    layer = make(padding)
    model = keras.Sequential([keras.Input(shape), layer])
    rng = np.random.default_rng(1)
    for w in layer.weights:
        w.assign(rng.uniform(-1.5, 1.5, size=w.shape).astype("float32"))
    x = rng.uniform(-8, 8, size=(33, *shape)).astype("float32")
    batch = np.asarray(model(x, training=False))
    alone = np.concatenate([np.asarray(model(x[i : i + 1], training=False)) for i in range(len(x))])
    assert np.array_equal(batch, alone)
    assert np.array_equal(model.predict(x, batch_size=32, verbose=0), alone)


_CONV_Q = dict(input_quantizer="quantized_bits(6, 4)", kernel_quantizer="quantized_bits(4, 1)", use_bias=False)


@pytest.mark.parametrize("form", ["activation", "Softmax", "Activation"])
def test_verify_compares_the_logits_of_a_stripped_softmax(form):
    """verify compared the softmax probabilities with the graph's logits (and crashed locating them)."""
    from edgebnn.verify import verify

    layers = [
        keras.Input((5,)),
        QuantDense(
            4,
            input_quantizer="quantized_bits(4, 2)",
            kernel_quantizer="ste_sign",
            use_bias=False,
            activation="softmax" if form == "activation" else None,
        ),
    ]
    if form != "activation":
        layers.append(keras.layers.Softmax() if form == "Softmax" else keras.layers.Activation("softmax"))
    model = keras.Sequential(layers)
    with pytest.warns(FreezeWarning, match="softmax"):
        graph = freeze(model, strip_softmax=True)
    x = np.random.default_rng(0).normal(size=(50, 5)).astype("float32") * 4
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0 and report.first_mismatches == []
    assert not np.allclose(model.predict(x, verbose=0).sum(axis=1), report.outputs["keras"].sum(axis=1))


@pytest.mark.parametrize("thing", ["model.keras", None, 3])
def test_freeze_of_something_not_a_model_is_one_sentence(thing):
    with pytest.raises(FreezeError, match=r"^freeze needs a Keras model .*, got (str|NoneType|int); load"):
        freeze(thing)


def test_first_input_quantizer_that_is_not_a_plain_conversion_is_named():
    model = small("ste_sign", first="quantized_tanh(4)")
    with pytest.raises(FreezeError, match=r"its input_quantizer quantized_tanh\(4\) gives grid values, not the plain"):
        freeze(model)


def frozen_as_predicted(model, x):
    """(graph, emulator outputs) of ``model`` frozen (its caveats' warnings aside), after checking
    that model.predict gives the emulator's outputs at batch sizes 1, 7 and 32."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FreezeWarning)
        graph = freeze(model)
    emu = emulate(graph, x)
    for batch in (1, 7, 32):
        assert np.array_equal(np.asarray(model.predict(x, batch_size=batch, verbose=0), dtype=np.float64), emu), batch
    return graph, emu


def test_batchnorm_under_xla_follows_predict_and_the_caveat_says_so(xla_allowed):
    """Keras's own BatchNormalization under XLA is one fused multiply-add, eager model(x) a
    rounded product and sum: at accumulator values on the moving mean the sign after it differs.
    The deployed model follows model.predict under XLA at every batch size (which verify
    compares against); where eager Keras differs, the xla_fma caveat names the node and says
    which path the deployed model follows."""
    model = keras.Sequential(
        [
            keras.Input((8,)),
            QuantDense(6, input_quantizer="quantized_bits(4, 3)", kernel_quantizer="ste_sign", use_bias=False, name="d"),
            keras.layers.BatchNormalization(epsilon=0.1, name="bn"),
            QuantActivation("ste_sign", name="q"),
        ]
    )
    rng = np.random.default_rng(5)
    model.layers[0].kernel.assign(rng.choice([-1.0, 1.0], size=(8, 6)).astype("float32"))
    gamma = np.float32([0.1, 0.3, 0.7, 1.3, 0.37, 3.1])
    model.layers[1].set_weights([gamma, np.zeros(6, "float32"), np.float32([3, -5, 1, 7, -2, 0]), np.float32([1.0] * 6)])
    model.compile(jit_compile=True)
    x = rng.integers(-8, 8, size=(2000, 8)).astype("float32")
    graph, emu = frozen_as_predicted(model, x)
    eager_differs = not np.array_equal(np.asarray(model(x), dtype=np.float64), emu)
    caveats = [c for c in graph.meta["keras_caveats"] if c["kind"] == "xla_fma"]
    assert bool(caveats) == eager_differs
    for c in caveats:
        assert c["node"] == "q" and "the deployed model follows model.predict under XLA" in c["reason"]


def test_verify_locates_an_eager_batchnorm_difference_after_a_float32_scaled_sum(xla_allowed):
    """The fuzzer's seed 33425 at raised float32-scale rates, smallest: XNOR scales per input
    (mean |W| of 6 values, float32) before a BatchNormalization with its mean on reached sums,
    under XLA. model.predict follows the graph at every batch size; where eager Keras differs
    (Keras's own BatchNormalization, compiled by XLA), verify names the node of the recorded
    xla_fma caveat, not the sum before it (its trace had summed in float32 where the layer sums
    exactly and rounds once), so the fuzzer reports it as explained."""
    from edgebnn.verify import verify

    dense = QuantDense(6, input_quantizer="quantized_bits(4, 3)", kernel_quantizer="xnor_sign(axis=0)", use_bias=False, name="d")
    model = keras.Sequential(
        [keras.Input((8,)), dense, keras.layers.BatchNormalization(epsilon=0.1, name="bn"), QuantActivation("ste_sign", name="q")]
    )
    rng = np.random.default_rng(5)
    dense.kernel.assign(rng.normal(size=(8, 6)).astype("float32"))
    x = rng.integers(-8, 8, size=(2000, 8)).astype("float32")
    sums = np.asarray(keras.Model(model.inputs[0], dense.output)(x))
    gamma = np.float32([0.1, 0.3, 0.7, 1.3, 0.37, 3.1])
    model.layers[1].set_weights([gamma, np.zeros(6, "float32"), sums[:6].diagonal().copy(), np.ones(6, "float32")])
    model.compile(jit_compile=True)
    graph, _ = frozen_as_predicted(model, x)
    eager = np.asarray(model(x), dtype=np.float64)
    report = verify(model, graph, x, keras_output=eager)
    recorded = {c["node"] for c in graph.meta["keras_caveats"] if c["kind"] == "xla_fma"}
    assert bool(recorded) == (report.keras_vs_emulator > 0)
    assert [m.layer for m in report.first_mismatches] == ["q"] * bool(recorded) and recorded <= {"q"}
