"""The input's type given the ways QKeras and larq users give it: a leading QuantActivation, a
leading Flatten / Reshape (and no-ops), a float first layer with ``freeze(input_type=...)``, and
the helper that proposes the type from the data."""

import functools
import re
import warnings

import keras
import numpy as np
import pytest
from graphs import fuzz_cases

from edgebnn import FixedType, propose_input_type, verify
from edgebnn.freeze import FreezeError, freeze
from edgebnn.layers import QuantActivation, QuantConv1D, QuantConv2D, QuantDense

Q8 = "quantized_bits(8, 0, keep_negative=False)"


def _model(shape, *layers):
    model = keras.Sequential([keras.Input(shape), *layers])
    rng = np.random.default_rng(0)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            c = layer.gamma.shape
            layer.set_weights([rng.uniform(0.5, 2, c), rng.normal(size=c), rng.normal(size=c), rng.uniform(0.5, 2, c)])
    return model


def _on_grid(shape, n=200, t="ufixed<8,0>"):
    """Data on the grid of ``t`` with a few values beyond its range (the input saturates or wraps)."""
    t = FixedType.from_string(t)
    rng = np.random.default_rng(1)
    return (rng.integers(t.min_code - 2, t.max_code + 3, size=(n, *shape)) * t.lsb).astype(np.float32)


def _frozen(model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return freeze(model, **kw)


@pytest.mark.parametrize(
    "shape, layers, ops",
    [
        ((16,), lambda: [QuantActivation(Q8), QuantDense(8, kernel_quantizer="ste_sign")], ["input", "dense", "affine"]),
        (
            (4, 4, 1),
            lambda: [keras.layers.Flatten(), QuantDense(8, input_quantizer=Q8, kernel_quantizer="ste_sign")],
            ["input", "flatten", "dense", "affine"],
        ),
        (
            (16,),
            lambda: [
                keras.layers.Dropout(0.2),
                keras.layers.Reshape((4, 4)),
                QuantConv1D(4, 3, input_quantizer=Q8, kernel_quantizer="ste_sign", use_bias=False),
            ],
            ["input", "reshape", "conv1d"],
        ),
        (
            (36,),
            lambda: [
                keras.layers.Reshape((6, 6, 1)),
                QuantActivation("quantized_relu(4, 1)"),
                QuantConv2D(3, 3, kernel_quantizer="ste_sign", use_bias=False),
                keras.layers.BatchNormalization(),
                QuantActivation("ste_sign"),
                keras.layers.Flatten(),
                QuantDense(2, kernel_quantizer="ste_sign", use_bias=False),
            ],
            ["input", "reshape", "conv2d", "threshold", "flatten", "dense"],
        ),
    ],
)
def test_a_leading_quant_activation_or_view_sets_the_input_and_is_exact(shape, layers, ops):
    model = _model(shape, *layers())
    graph = _frozen(model)
    assert [n.op for n in graph.nodes] == ops
    assert graph.input.shape == shape  # the hardware input keeps the model's input shape; the view follows it
    report = verify(model, graph, _on_grid(shape, t="ufixed<8,1>"))
    assert report.keras_vs_emulator == 0, report.describe()


def test_a_leading_binary_quant_activation_is_refused_with_the_fix():
    model = _model((16,), QuantActivation("ste_sign", name="a"), QuantDense(2, kernel_quantizer="ste_sign"))
    with pytest.raises(FreezeError) as err:
        freeze(model)
    assert str(err.value) == (
        "layer 'a' (QuantActivation) is the first layer, but its quantizer ste_sign gives binary values, not the plain "
        "ap_fixed conversion the hardware input makes; freeze with the data's type (input_type='ufixed<8,0>'; "
        "edgebnn.propose_input_type(x) finds it) so that the hardware applies it to the converted input, or use "
        "quantized_bits or quantized_relu there (e.g. quantized_bits(8, 0, keep_negative=False))"
    )


def test_a_leading_layer_that_is_not_a_view_names_the_ways_to_give_the_type():
    dense = QuantDense(2, input_quantizer=Q8, kernel_quantizer="ste_sign")
    model = _model((16,), keras.layers.BatchNormalization(name="bn"), dense)
    with pytest.raises(FreezeError, match=r"layer 'bn' \(BatchNormalization\) comes before any layer that sets the input's"):
        freeze(model)


def _larq_stem(first_bn=False):
    """larq's usual stem: a float first layer (binary weights, no input quantizer); or a
    normalization and a sign of the float input before it."""
    head = [keras.layers.BatchNormalization(), QuantActivation("ste_sign")] if first_bn else []
    return _model(
        (16,),
        *head,
        QuantDense(8, kernel_quantizer="ste_sign", use_bias=False, name="first"),
        keras.layers.BatchNormalization(),
        QuantActivation("ste_sign"),
        QuantDense(3, kernel_quantizer="ste_sign", use_bias=False),
    )


@pytest.mark.parametrize("first_bn", [False, True])
def test_a_float_first_layer_with_an_input_type_is_exact_on_data_on_its_grid(first_bn):
    model = _larq_stem(first_bn)
    refusal = r"\(BatchNormalization\) comes before any" if first_bn else r"'first' \(QuantDense\) is the first layer and reads"
    with pytest.raises(FreezeError, match=refusal + ".*input_type='ufixed<8,0>'"):
        freeze(model)
    graph = _frozen(model, input_type="ufixed<8,0>")
    assert str(graph.input.type) == "ufixed<8,0>" and graph.meta["input_type"] == "ufixed<8,0>"
    x = _on_grid((16,), t="ufixed<8,0>")
    x = FixedType.from_string("ufixed<8,0>").quantize(x).astype(np.float32)  # Keras reads the data as they are
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    off = x.copy()
    off[3, 5] += 1e-3
    with pytest.raises(ValueError, match=r"^sample 3 of the data is not on the grid of the input type ufixed<8,0>"):
        verify(model, graph, off)


def test_an_input_type_is_refused_when_it_is_unreadable_or_given_twice():
    with pytest.raises(FreezeError, match=r"^input_type: cannot parse fixed-point type 'ufixd<8,0>'"):
        freeze(_larq_stem(), input_type="ufixd<8,0>")
    model = _model((16,), QuantDense(2, input_quantizer=Q8, kernel_quantizer="ste_sign", name="d"))
    with pytest.raises(FreezeError) as err:
        freeze(model, input_type="ufixed<8,0>")
    assert str(err.value) == (
        "layer 'd' (QuantDense) sets the input's type with its input_quantizer quantized_bits(keep_negative=False), and "
        "freeze was given input_type='ufixed<8,0>' too; give only one of them"
    )


def test_propose_input_type_finds_the_narrowest_exact_type_or_the_range():
    from sklearn.datasets import load_digits

    x = load_digits().data
    for data, text in [(x, "uint<5>"), (x / 16, "ufixed<5,1>"), (x / 16 - 0.5, "fixed<5,1>"), (np.array([4.0, 8.0]), "uint<4>")]:
        t = propose_input_type(data)
        assert str(t) == text and t.contains(data)
        assert not t.replace(width=t.width - 1, integer=t.integer - 1).contains(data)  # one bit finer does not hold them
    wide = np.random.default_rng(0).random(100) * 3
    t = propose_input_type(wide, max_width=10)
    assert str(t) == "ufixed<10,2,RND,SAT>" and not t.contains(wide) and t.contains(t.quantize(wide))
    with pytest.raises(ValueError, match="finite data"):
        propose_input_type(np.array([1.0, np.nan]))


def test_a_last_layer_with_a_float_bias_ends_in_its_own_affine_node():
    model = _model((4,), QuantDense(3, input_quantizer="quantized_bits(4, 0)", kernel_quantizer="ste_sign", name="d"))
    graph = _frozen(model)
    assert [(n.op, n.name) for n in graph.nodes] == [("input", "input"), ("dense", "d"), ("affine", "d_bias")]
    report = verify(model, graph, _on_grid((4,), t="fixed<4,1>"))
    assert report.keras_vs_emulator == 0, report.describe()


@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_a_float_bias_of_zeros_exports_without_its_affine_layer(io_type, tmp_path):
    """A bias as Keras initializes it (zeros) is an affine node that changes nothing; hls4ml would
    fuse its layer into the dense layer before it, so export leaves it out (once a "please
    report this" error after hls4ml's flows)."""
    from graphs import PYNQ, export_quietly

    model = _model((4,), QuantDense(3, input_quantizer="quantized_bits(4, 0)", kernel_quantizer="ste_sign", name="d"))
    assert not model.get_layer("d").get_weights()[1].any()
    graph = _frozen(model)
    assert graph.output.name == "d_bias"
    project = export_quietly(graph, tmp_path / "prj", board=PYNQ, io_type=io_type)
    assert [layer.name for layer in project.model.get_layers()][-1] == "d"


@functools.cache
def _front_cases():
    """The first 14 fuzzer models from seed 30000 that give the input's type another way, with
    their outcomes (one set for the tests below)."""
    from edgebnn import fuzz

    def front(layers):
        return any("the input as" in line or "input_type=" in line or "the QuantActivation before it" in line for line in layers)

    cases = fuzz_cases(front, 14, start=30000)
    return [(case, fuzz.check(case)) for case in cases]


def test_fuzzed_models_give_the_input_type_every_way_and_agree():
    outcomes = [o for _, o in _front_cases()]
    assert not [o for o in outcomes if o.status in ("mismatch", "crash")], [o.line() for o in outcomes]
    forms = {f for o in outcomes if o.status == "ok" for f in o.forms if f.startswith("input: ")}
    assert {"input: input_type", "input: QuantActivation"} <= forms, forms
    assert any(f.endswith(" first") for f in forms), forms


@pytest.mark.csim
@pytest.mark.parametrize("io_type, form", [("io_parallel", "input: input_type"), ("io_stream", "input: QuantActivation")])
def test_fuzzed_front_door_models_c_simulate_exactly(io_type, form, tmp_path):
    """The first of those models that freezes with an input type (io_parallel) or a leading
    QuantActivation (io_stream) C-simulates bit for bit."""
    from edgebnn import fuzz

    case = next(c for c, o in _front_cases() if o.status == "ok" and form in o.forms)
    out = fuzz.check(case, io_type, workdir=tmp_path)
    assert (out.status, out.csim) == ("ok", io_type), out.line()


A1 = "quantized_bits(6, 0, alpha=1)"


def test_quantized_bits_with_alpha_1_is_the_plain_grid():
    from edgebnn import quantizers

    x = np.linspace(-3, 3, 20001, dtype=np.float32)
    for args in ("6, 0", "4, 2, keep_negative=False", "5, 1, symmetric=True"):
        with_alpha, plain = quantizers.get(f"quantized_bits({args}, alpha=1)"), quantizers.get(f"quantized_bits({args})")
        assert with_alpha.hardware() == plain.hardware()
        np.testing.assert_array_equal(np.asarray(with_alpha(x)), np.asarray(plain(x)))
    assert quantizers.get("quantized_bits(6, 0, alpha=0.5)").hardware().kind == "scaled"  # other alphas stay scales


def _hls4ml_tutorial_mlp(zero_second=False):
    """hls4ml's QKeras tutorial MLP in small: alpha=1 kernels and biases, quantized_relu; the
    second layer's weights (optionally) all rounding to zero."""
    init = {"kernel_initializer": "zeros"} if zero_second else {}
    model = _model(
        (16,),
        QuantDense(8, input_quantizer=Q8, kernel_quantizer=A1, bias_quantizer=A1),
        QuantActivation("quantized_relu(6)"),
        QuantDense(6, kernel_quantizer="quantized_bits(4, 0)", use_bias=False, **init),
        QuantActivation("quantized_relu(3)"),
        QuantDense(5, kernel_quantizer=A1, bias_quantizer=A1),
    )
    rng = np.random.default_rng(2)
    for layer in (model.layers[0], model.layers[-1]):
        layer.set_weights([rng.uniform(-1, 1, w.shape).astype(np.float32) for w in layer.get_weights()])
    return model


@pytest.mark.parametrize("zero_second", [False, True])
def test_the_hls4ml_tutorial_forms_freeze_exactly(zero_second):
    model = _hls4ml_tutorial_mlp(zero_second)
    graph = _frozen(model)
    # a conversion of an all-zero accumulator (ufixed<1,-10>) would abort hls4ml's C-simulation: thresholds instead
    assert [n.op for n in graph.nodes] == ["input", "dense", "cast", "dense", "threshold" if zero_second else "cast", "dense"]
    report = verify(model, graph, _on_grid((16,)))
    assert report.keras_vs_emulator == 0, report.describe()


@pytest.mark.csim
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_the_hls4ml_tutorial_forms_c_simulate_exactly(io_type, tmp_path):
    from edgebnn import export
    from edgebnn.boards import load_board

    model = _hls4ml_tutorial_mlp(zero_second=True)
    graph = _frozen(model)
    project = export(graph, tmp_path / "prj", board=load_board("pynq-z2"), io_type=io_type)
    project.compile()
    report = verify(model, graph, _on_grid((16,)), project=project)
    assert (report.keras_vs_emulator, report.emulator_vs_csim) == (0, 0), report.describe()


def test_a_refusal_naming_many_channels_stays_short():
    from edgebnn.errors import brief

    text = "channels [1, 2, 6, 7, 10, 11, 13, 14, 15] and [1, 2, 3]"
    assert brief(text) == "channels [1, 2, 6, 7, ..., 14, 15] (9 values) and [1, 2, 3]"
    chosen = list(range(0, 60, 2))
    kq = f"partial('xnor_sign(axis=None)', {chosen}, axis=0, other='xnor_sign(axis=0)')"
    model = _model((60,), QuantDense(4, input_quantizer=Q8, kernel_quantizer=kq, use_bias=False))
    model.layers[0].set_weights([np.random.default_rng(0).uniform(-1, 1, (60, 4)).astype(np.float32)])
    # its float32 scales on 30 chosen channels are summed exactly; with nothing after the layer to
    # replay the sum's one rounding it is refused, in a sentence that names the layer, not the channels
    with pytest.raises(FreezeError) as err:
        freeze(model)
    message = str(err.value)
    assert message.startswith("layer 'quant_dense") and "float32 scales" in message and len(message) < 600, message
    # a refusal that lists the channels (1,150 characters in full) is shortened by FreezeError itself
    listed = str(FreezeError(f"layer 'd': its kernel_quantizer scales the weights on the channels {chosen} of axis 0"))
    assert "[0, 2, 4, 6, ..., 56, 58] (30 values)" in listed and len(listed) < 200, listed


def _larq_head():
    """larq's usual classifier head: QuantDense -> BatchNormalization(scale=False) -> softmax,
    with trained-looking statistics (no exact fixed-point affine form of the accumulator)."""
    model = keras.Sequential(
        [
            keras.Input((16,)),
            QuantDense(12, input_quantizer=Q8, kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(scale=False),
            QuantDense(4, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False, name="head"),
            keras.layers.BatchNormalization(scale=False, name="head_bn"),
            keras.layers.Activation("softmax", name="probabilities"),
        ]
    )
    rng = np.random.default_rng(0)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            c = layer.beta.shape
            layer.set_weights([rng.normal(size=c), rng.normal(size=c), rng.uniform(0.5, 2, c)])
    return model


def test_a_float_head_is_refused_with_an_output_quantizer_that_then_verifies_exactly(tmp_path):
    from edgebnn.graph import Graph

    model = _larq_head()
    with pytest.raises(FreezeError) as err:
        _frozen(model)
    proposal = re.search(r"output_quantizer='([^']+)'", str(err.value))
    assert str(err.value).startswith("layer 'head_bn' (BatchNormalization): the model ends with the real-valued outputs")
    assert proposal, str(err.value)
    graph = _frozen(model, output_quantizer=proposal.group(1))
    assert graph.meta["output_quantizer"] == proposal.group(1) and graph.meta["stripped_softmax"]["layer"] == "probabilities"
    graph.save(tmp_path / "g.npz")
    graph = Graph.load(tmp_path / "g.npz")
    x = _on_grid((16,))
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    # what is verified is the model's own logits rounded by that quantizer, nothing else
    from edgebnn import quantizers
    from edgebnn.freeze import keras_logits

    logits = keras_logits(model).predict(x, verbose=0)
    rounded = np.asarray(keras.ops.convert_to_numpy(quantizers.get(proposal.group(1))(logits)), dtype=np.float64)
    assert np.array_equal(rounded, edgebnn_emulate(graph, x))
    # the proposed range holds every logit: nothing saturates
    t = FixedType.from_string(str(graph.output.type))
    assert np.all(np.abs(logits) < 2 ** (t.integer - 1)), (t, np.abs(logits).max())


def edgebnn_emulate(graph, x):
    from edgebnn import emulate

    return emulate(graph, x)


def test_an_output_quantizer_is_checked():
    with pytest.raises(FreezeError, match=r"^output_quantizer: unknown quantizer 'quantized_bitz\(8, 3\)'"):
        freeze(_larq_head(), output_quantizer="quantized_bitz(8, 3)")
    with pytest.raises(FreezeError, match="output_quantizer rounds the logits, so it needs strip_softmax=True"):
        freeze(_larq_head(), output_quantizer="quantized_bits(8, 3)", strip_softmax=False)


@pytest.mark.parametrize("lead", ["quantized_relu_po2(4, 4)", "ste_sign", "ste_heaviside"])
def test_a_leading_quantizer_that_is_no_conversion_requantizes_the_given_input_type(lead):
    """QKeras's QActivation("quantized_relu_po2(4,4)") on the float input: refused alone with
    the advice to give the input's type; with it, the hardware applies it to the converted input."""
    model = _model((16,), QuantActivation(lead, name="lead"), QuantDense(4, kernel_quantizer="quantized_bits(4, 0, alpha=1)"))
    with pytest.raises(
        FreezeError, match=r"^layer 'lead' \(QuantActivation\) is the first layer, but .*freeze with the data's type"
    ):
        _frozen(model)
    graph = _frozen(model, input_type="ufixed<5,1>")
    assert [n.op for n in graph.nodes][:2] == ["input", "threshold"]
    x = _on_grid((16,), t="ufixed<5,1>")
    x = FixedType.from_string("ufixed<5,1>").quantize(x).astype(np.float32)
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
