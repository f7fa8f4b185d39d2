"""freeze(model, data=x): float layers at the edges get quantizers chosen from the data (the
fewest bits within the accuracy bound), and the graph computes that twin bit for bit."""

import warnings

import keras
import numpy as np
import pytest

from edgebnn import verify
from edgebnn.data import load_dataset
from edgebnn.freeze import FreezeError, FreezeWarning, freeze, plan
from edgebnn.freeze.calibrate import MIN_BITS, _accuracy, calibrate, specs_at, twin
from edgebnn.layers import QuantConv2D, QuantDense

pytestmark = pytest.mark.train  # trains small models: an untrained one sits on a knife's edge


@pytest.fixture(scope="module")
def digits():
    x, y, _, _ = load_dataset("digits", shape=[8, 8, 1])
    return 2 * x[:300] - 1, y[:300]  # larq's [-1, 1] scaling, on the grid of fixed<5,2>


def trained(model, digits, epochs=8):
    """The model trained a little: an untrained one has predictions on a knife's edge, which
    any rounding flips."""
    x, y = digits
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy")
    model.fit(x, y, epochs=epochs, batch_size=32, verbose=0)
    return model


def float_edges(seed=0):
    """larq zoo's shape: a float Conv2D stem, a binary middle, a float Dense head reading a
    BatchNormalization's real values, then softmax."""
    keras.utils.set_random_seed(seed)
    x = inputs = keras.Input((8, 8, 1))
    x = keras.layers.Conv2D(4, 3, padding="same", use_bias=False, name="stem")(x)
    x = keras.layers.BatchNormalization(name="bn0")(x)
    x = QuantConv2D(6, 3, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False, name="mid")(x)
    x = keras.layers.BatchNormalization(name="bn1")(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(10, name="head")(x)
    model = keras.Model(inputs, keras.layers.Activation("softmax")(x))
    for bn in ("bn0", "bn1"):  # statistics that make the BatchNormalization do something
        layer = model.get_layer(bn)
        c = layer.gamma.shape[0]
        rng = np.random.default_rng(seed)
        layer.set_weights([rng.uniform(0.5, 2, c), rng.normal(0, 0.3, c), rng.normal(0, 0.5, c), rng.uniform(0.5, 2, c)])
    return model


@pytest.fixture(scope="module")
def frozen(digits):
    model = trained(float_edges(), digits)
    x, _ = digits
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = freeze(model, data=x)
    lines = [str(w.message) for w in caught if issubclass(w.category, FreezeWarning)]
    return model, graph, lines


def test_without_data_the_refusal_stays(digits):
    with pytest.raises(FreezeError, match="'stem'.*float weights"):
        freeze(float_edges())


def test_twin_equals_the_graph_bit_for_bit(digits, frozen):
    model, graph, _ = frozen
    x, _ = digits
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    # the twin is the user's model with quantizers: Keras's twin's logits are the graph's
    ref = twin(model, graph.meta["calibration"]["layers"])
    logits = keras.Model(ref.inputs, ref.get_layer("head").output).predict(x, verbose=0)
    assert np.array_equal(np.asarray(logits, np.float64), report.outputs["emulator"])


def test_says_what_it_chose_one_line_per_layer(frozen):
    _, graph, lines = frozen
    cal = graph.meta["calibration"]
    assert set(cal["layers"]) == {"stem", "head"}
    assert set(cal["layers"]["head"]) == {"kernel_quantizer", "bias_quantizer", "input_quantizer"}  # reads bn1's reals
    assert set(cal["layers"]["stem"]) == {"kernel_quantizer"}  # reads the data, on the input type's grid
    assert graph.meta["input_type"] == "fixed<5,2>"
    for name in ("stem", "head"):
        assert sum(f"calibrated layer {name!r}: kernel {cal['layers'][name]['kernel_quantizer']}" in l for l in lines) == 1
    assert f"input {cal['layers']['head']['input_quantizer']}" in next(l for l in lines if "'head'" in l)
    assert sum("calibrated the input type: fixed<5,2>" in line for line in lines) == 1


def test_fewest_bits_within_the_bound(digits, frozen):
    model, graph, _ = frozen
    x, _ = digits
    cal = graph.meta["calibration"]
    labels = np.argmax(model.predict(x, verbose=0), -1)  # no labels given: the float model's own
    assert cal["accuracy_float"] == 100.0 and not cal["labelled"]
    assert cal["accuracy_float"] - cal["accuracy_twin"] <= 0.5
    assert cal["bits"]["stem"].keys() == {"kernel"} and cal["bits"]["head"].keys() == {"kernel", "input"}
    assert specs_at(model, x, cal["bits"]) == cal["layers"]
    for name, widths in cal["bits"].items():
        for tensor, bits in widths.items():
            if bits > MIN_BITS:  # one bit fewer on any tensor leaves the bound
                fewer = specs_at(model, x, {**cal["bits"], name: {**widths, tensor: bits - 1}})
                acc = _accuracy(twin(model, fewer).predict(x, verbose=0), labels)
                assert 100.0 - acc > 0.5, (name, tensor, bits - 1, acc)


def test_labels_and_a_bound_the_data_cannot_meet(digits):
    x, y = digits
    model = trained(float_edges(seed=1), digits)
    cal = calibrate(model, (x, y), max_drop=2.0)
    assert cal.labelled and cal.accuracy_float - cal.accuracy_twin <= 2.0
    assert cal.accuracy_float == _accuracy(model.predict(x, verbose=0), y)
    with pytest.raises(FreezeError, match="accuracy points on the data, more than the bound -1"):
        calibrate(model, x, max_drop=-1.0)


def test_edgebnn_layer_without_kernel_quantizer_is_calibrated(digits):
    x, _ = digits
    keras.utils.set_random_seed(2)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Flatten(),
            QuantDense(16, kernel_quantizer="ste_sign", use_bias=False, name="d0"),
            keras.layers.BatchNormalization(),
            QuantDense(10, input_quantizer="ste_sign", name="d1"),  # float weights, binary input
        ]
    )
    graph = freeze(model, data=x)
    assert set(graph.meta["calibration"]["layers"]) == {"d1"}
    assert "input_quantizer" not in graph.meta["calibration"]["layers"]["d1"]  # its own quantizer stays
    assert verify(model, graph, x).keras_vs_emulator == 0


def residual(seed=3):
    """Bi-Real Net's shape on flat digits: a binary block whose BatchNormalization outputs are
    added to its real-valued input, that input read by the block and by the add."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((8, 8, 1))
    x = keras.layers.Flatten()(inputs)
    x = QuantDense(16, input_quantizer="quantized_bits(5, 1)", kernel_quantizer="ste_sign", use_bias=False, name="d0")(x)
    x = keras.layers.BatchNormalization(name="stream")(x)
    y = QuantDense(16, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False, name="d1")(x)
    y = keras.layers.BatchNormalization(name="block")(y)
    x = keras.layers.Add(name="add")([y, x])
    x = QuantDense(10, input_quantizer="ste_sign", kernel_quantizer="ste_sign", use_bias=False, name="d2")(x)
    return keras.Model(inputs, keras.layers.Activation("softmax")(x))


def test_a_real_valued_stream_is_calibrated_where_the_graph_needs_a_grid(digits):
    """Without data the branching real-valued tensor is refused; with data freeze quantizes it
    (and the BatchNormalization's outputs the add reads) in the twin, widths chosen within the
    bound, and the graph computes that twin bit for bit (the published Bi-Real-Net row)."""
    x, _ = digits
    model = trained(residual(), digits)
    with pytest.raises(FreezeError, match="layer 'stream' \\(BatchNormalization\\): its real-valued outputs branch"):
        freeze(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = freeze(model, data=x)
    cal = graph.meta["calibration"]
    assert cal["layers"] == {} and set(cal["tensors"]) == {"stream", "block"}
    assert all(cal["bits"][name].keys() == {"output"} and cal["bits"][name]["output"] < 16 for name in cal["tensors"])
    assert cal["accuracy_float"] - cal["accuracy_twin"] <= 0.5
    lines = [str(w.message) for w in caught if issubclass(w.category, FreezeWarning)]
    for name, quantizer in cal["tensors"].items():
        assert sum(f"calibrated the outputs of {name!r}: {quantizer}" in line for line in lines) == 1
    report = verify(model, graph, x)
    assert report.keras_vs_emulator == 0, report.describe()
    ref = twin(model, cal["layers"], cal["tensors"])
    assert [l.name for l in ref.layers if l.name.endswith("_calibrated")] == ["stream_calibrated", "block_calibrated"]
    logits = keras.Model(ref.inputs, ref.get_layer("d2").output).predict(x, verbose=0)
    assert np.array_equal(np.asarray(logits, np.float64), report.outputs["emulator"])


def test_the_run_pipeline_calibrates_with_its_training_data(tmp_path, capsys):
    """A configuration whose first layer reads floats with float weights and whose last layer
    has float weights: checked before training, calibrated by the freeze stage on the training
    data, verified against the twin with the float model's accuracy beside it."""
    import json

    import yaml

    from edgebnn import cli
    from edgebnn.errors import EXIT_OK

    config = {
        "name": "float_edges",
        "board": "pynq-z2",
        "data": {"dataset": "digits", "test_fraction": 0.2, "seed": 0},
        "model": [
            {"QuantDense": {"units": 16, "use_bias": False}},
            {"BatchNormalization": {"momentum": 0.9}},
            {"QuantDense": {"units": 16, "input_quantizer": "ste_sign", "kernel_quantizer": "ste_sign", "use_bias": False}},
            {"BatchNormalization": {"momentum": 0.9}},
            {"QuantDense": {"units": 10, "input_quantizer": "ste_sign"}},
        ],
        "train": {"epochs": 3, "batch_size": 64, "optimizer": "adam", "learning_rate": 0.01, "seed": 0},
        "export": {"backend": "Vitis", "io_type": "io_parallel"},
    }
    cfg = tmp_path / "float_edges.yaml"
    cfg.write_text(yaml.safe_dump(config))
    run = tmp_path / "run"
    assert cli.main(["train", str(cfg), "-o", str(run)]) == EXIT_OK
    assert cli.main(["freeze", str(run)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "calibrated layer 'quant_dense': kernel quantized_bits(" in out
    assert "calibrated layer 'quant_dense_2': kernel quantized_bits(" in out
    assert "calibrated the input type: ufixed<5,1>" in out
    manifest = json.loads((run / "run.json").read_text())
    assert "config:data" in manifest["stages"]["freeze"]["inputs"]
    assert cli.main(["verify", str(run)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "Keras's leg is the model's calibrated twin (quant_dense, quant_dense_2 quantized)" in out
    result = json.loads((run / "verify.json").read_text())
    assert result["mismatches"]["keras_vs_emulator"] == 0
    assert set(result["calibration"]["layers"]) == {"quant_dense", "quant_dense_2"}
    assert 0 < result["calibration"]["accuracy_float"] <= 1


def test_the_run_pipeline_checks_a_real_valued_stream_as_the_twin_calibration_makes(digits):
    """Before training, a run checks the structure as the freeze stage will calibrate it: a
    real-valued tensor where the graph needs a grid is what calibration quantizes, so the check
    passes (it refused such a model before training) and the freeze stage calibrates."""
    from edgebnn.run.stages import _calibration_helps, _check_structure

    x, _ = digits
    model = residual()
    with pytest.raises(FreezeError, match="'stream'"):
        plan(model)
    assert _calibration_helps(model, None) and _calibration_helps(model, "fixed<5,2>")
    _check_structure(model, None, x)
    _check_structure(model, "fixed<5,2>", x)
