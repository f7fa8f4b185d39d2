"""freeze: thresholds reproduce the model's own float32 inference exactly, at the edges."""

import itertools
import subprocess
import sys

import keras
import numpy as np
import pytest
from bn import adversarial_bn

import edgebnn  # noqa: F401
from edgebnn.emulate import emulate
from edgebnn.freeze import FreezeError, freeze
from edgebnn.graph import Graph
from edgebnn.layers import QuantActivation, QuantDense
from edgebnn.verify import verify

N_IN, LSB = 4, 1 / 16


def all_inputs():
    """Every input of 4 features on the 4-bit unsigned grid: all reachable accumulators."""
    codes = np.array(list(itertools.product(range(16), repeat=N_IN)), dtype=np.float32)
    return codes * LSB


def bn_model(units, out_quantizer="ste_sign", use_bias=False):
    return keras.Sequential(
        [
            keras.Input((N_IN,)),
            QuantDense(
                units, input_quantizer="quantized_bits(4, 0, keep_negative=False)", kernel_quantizer="ste_sign", use_bias=use_bias
            ),
            keras.layers.BatchNormalization(),
            QuantActivation(out_quantizer),
        ]
    )


def set_bn(model, gamma, beta, mean, var):
    bn = model.layers[1]
    bn.set_weights([np.asarray(v, dtype=np.float32) for v in (gamma, beta, mean, var)])


def adversarial_params(units, rng):
    return adversarial_bn(units, rng, np.arange(-60, 61) * LSB)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sign_thresholds_exact_on_every_reachable_accumulator(seed):
    rng = np.random.default_rng(seed)
    model = bn_model(48)
    set_bn(model, *adversarial_params(48, rng))
    graph = freeze(model)
    x = all_inputs()
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    # the edges are really hit: some channels flip exactly at a reachable accumulator value
    acc = emulate(graph, x, return_all=True)[graph.nodes[1].name]
    t = graph.nodes[2].params["thresholds"][:, 0] * graph.nodes[1].type.lsb
    assert np.sum(np.any(acc == t[None, :], axis=0)) > 10


def test_tie_at_zero_is_plus_one_and_negative_and_zero_gamma():
    model = bn_model(4)
    model.layers[0].kernel.assign(np.ones((N_IN, 4), dtype=np.float32))  # accumulators span [0, 3.75]
    # mean on the grid, beta 0: BN output is exactly 0 at acc == mean -> sign(0) = +1
    set_bn(model, gamma=[1.0, -1.0, 0.0, -0.0], beta=[0.0, 0.0, 0.0, -0.5], mean=[0.5, 0.5, 0.5, 0.5], var=[1.0, 1.0, 1.0, 1.0])
    graph = freeze(model)
    node = graph.nodes[2]
    acc_type = graph.nodes[1].type
    code = int(acc_type.codes(0.5))
    # gamma > 0: -1 below 0.5, +1 from 0.5 on (the tie goes to +1)
    assert node.params["thresholds"][0, 0] == code and list(node.params["levels"][0]) == [-1, 1]
    # gamma < 0: +1 up to and including 0.5, -1 above
    assert node.params["thresholds"][1, 0] == code + 1 and list(node.params["levels"][1]) == [1, -1]
    # gamma == 0: constant sign(beta): +1 for beta 0, -1 for beta -0.5
    assert set(node.params["levels"][2]) == {1} and set(node.params["levels"][3]) == {-1}
    assert verify(model, graph, all_inputs()).keras_vs_emulator == 0


@pytest.mark.parametrize("jit", [False, True])
def test_multilevel_output_with_float_bias(jit):
    rng = np.random.default_rng(5)
    model = bn_model(16, out_quantizer="quantized_bits(5, 2)", use_bias=True)
    model.layers[0].bias.assign(rng.normal(size=16).astype(np.float32) * 0.3)
    set_bn(model, *adversarial_params(16, rng))
    model.compile(jit_compile=jit)
    graph = freeze(model)
    assert verify(model, graph, all_inputs()).keras_vs_emulator == 0
    assert graph.output.type.width == 5 and graph.output.params["thresholds"].shape[1] > 1


def test_graph_file_round_trip_and_loads_without_tensorflow(tmp_path):
    model = bn_model(6)
    set_bn(model, *adversarial_params(6, np.random.default_rng(3)))
    graph = freeze(model)
    path = tmp_path / "g.npz"
    graph.save(path)
    x = all_inputs()[::37]
    np.testing.assert_array_equal(emulate(Graph.load(path), x), emulate(graph, x))
    np.save(tmp_path / "x.npy", x)
    code = (
        "import sys; sys.modules['tensorflow'] = None; sys.modules['keras'] = None\n"
        "import numpy as np, edgebnn\n"
        f"g = edgebnn.Graph.load({str(path)!r})\n"
        f"np.save({str(tmp_path / 'y.npy')!r}, edgebnn.emulate(g, np.load({str(tmp_path / 'x.npy')!r})))\n"
        "assert 'tensorflow' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), emulate(graph, x))


def test_unsupported_layer_is_named():
    model = keras.Sequential(
        [
            keras.Input((N_IN,)),
            QuantDense(3, input_quantizer="quantized_bits(4, 0)", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.LayerNormalization(name="ln"),
            QuantActivation("ste_sign"),
        ]
    )
    with pytest.raises(FreezeError, match=r"layer 'ln' \(LayerNormalization\) cannot be frozen"):
        freeze(model)


def test_float_output_and_float_kernel_and_softmax_are_refused():
    m = keras.Sequential(
        [
            keras.Input((N_IN,)),
            QuantDense(3, input_quantizer="quantized_bits(4, 0)", kernel_quantizer="ste_sign"),
            keras.layers.BatchNormalization(),
        ]
    )
    with pytest.raises(FreezeError, match="real-valued outputs"):
        freeze(m)
    m = keras.Sequential([keras.Input((N_IN,)), QuantDense(3, input_quantizer="quantized_bits(4, 0)")])
    with pytest.raises(FreezeError, match="float kernel"):
        freeze(m)
    m = keras.Sequential([keras.Input((N_IN,)), QuantDense(3, kernel_quantizer="ste_sign")])
    with pytest.raises(FreezeError, match="reads floats: give it a fixed-point input_quantizer.*input_type="):
        freeze(m)
    m = keras.Sequential(
        [
            keras.Input((N_IN,)),
            QuantDense(3, input_quantizer="quantized_bits(4, 0)", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.Activation("softmax", name="sm"),
        ]
    )
    with pytest.raises(FreezeError, match="'sm'.*from_logits"):
        freeze(m, strip_softmax=False)


def _softmax_models():
    q = dict(input_quantizer="quantized_bits(4, 0, keep_negative=False)", kernel_quantizer="ste_sign", use_bias=False)
    yield (
        keras.Sequential([keras.Input((N_IN,)), QuantDense(3, name="d", **q), keras.layers.Activation("softmax", name="sm")]),
        "sm",
    )
    yield keras.Sequential([keras.Input((N_IN,)), QuantDense(3, name="d", activation="softmax", **q)]), "d"
    yield (
        keras.Sequential(
            [keras.Input((N_IN,)), QuantDense(3, name="d", **q), keras.layers.Softmax(name="sml"), keras.layers.Dropout(0.1)]
        ),
        "sml",
    )


@pytest.mark.parametrize("index", [0, 1, 2])
def test_strip_softmax_gives_the_logits_and_records_it(index):
    from edgebnn.freeze import FreezeWarning

    model, layer = list(_softmax_models())[index]
    if index < 2:  # strip_softmax=False refuses (a Softmax layer is refused as unsupported)
        with pytest.raises(FreezeError, match="from_logits"):
            freeze(model, strip_softmax=False)
    with pytest.warns(FreezeWarning, match=f"softmax of layer '{layer}'.*logits"):
        graph = freeze(model)  # stripped by default
    assert graph.meta["stripped_softmax"] == {"n": 3, "layer": layer}
    assert [n.op for n in graph.compute_nodes()] == ["dense"]
    x = all_inputs()
    logits = np.asarray(model.layers[0](x)) if index != 1 else None
    y = emulate(graph, x)
    if logits is not None:
        np.testing.assert_array_equal(y, logits)
    probs = np.asarray(model.predict(x, verbose=0))
    np.testing.assert_array_equal(np.argmax(y, axis=-1), np.argmax(probs, axis=-1))


def test_strip_softmax_leaves_models_without_one_alone():
    import warnings as w

    model = bn_model(3)
    with w.catch_warnings():
        w.simplefilter("error")
        graph = freeze(model, strip_softmax=True)
    assert "stripped_softmax" not in graph.meta
    m = keras.Sequential(
        [
            keras.Input((N_IN,)),
            QuantDense(3, input_quantizer="quantized_bits(4, 0)", kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.Activation("softmax", name="sm"),
            QuantActivation("ste_sign"),
        ]
    )
    with pytest.raises(FreezeError, match="'sm'.*from_logits"):  # not trailing: still refused
        freeze(m, strip_softmax=True)
