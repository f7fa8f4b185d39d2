"""The example zoo (examples/zoo/*.yaml): every config loads, builds a model that freezes before
training is spent on it, and freezes bit for bit with trained-looking statistics; the README
lists every example; one example runs end to end through examples/zoo.py in both io types
(one epoch: the check is the flow and bit-exactness, not the accuracy)."""

import pathlib
import sys
import warnings

import keras
import numpy as np
import pytest

from edgebnn.config import build_model, load_config
from edgebnn.data import load_dataset
from edgebnn.emulate import emulate
from edgebnn.freeze import freeze, plan

ROOT = pathlib.Path(__file__).resolve().parent.parent
ZOO = sorted((ROOT / "examples" / "zoo").glob("*.yaml"))


def test_the_zoo_has_the_ten_examples_the_readme_lists():
    names = [p.stem for p in ZOO]
    assert len(names) == 10
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("| example |") :].split("\n\n")[0]
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == names


@pytest.mark.parametrize("path", ZOO, ids=lambda p: p.stem)
def test_each_example_builds_a_deployable_model_that_freezes_exactly(path):
    config = load_config(path)
    x_tr, _, x_te, _ = load_dataset(**config["data"])
    assert len(x_te) == 360
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)  # the initial kernels, whatever ran before in this worker
    model = build_model(config, x_tr.shape[1:])
    plan(model, input_type=config["freeze"]["input_type"])  # what the run checks before training
    rng = np.random.default_rng(0)
    model(x_tr[:64], training=True)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            c = layer.gamma.shape[0]
            layer.set_weights([rng.uniform(0.5, 2, c), rng.normal(size=c), rng.normal(size=c), rng.uniform(0.5, 2, c)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = freeze(model, input_type=config["freeze"]["input_type"])
    keras_out = model.predict(x_te, verbose=0)
    assert np.array_equal(emulate(graph, x_te).reshape(keras_out.shape), keras_out)
    assert len(np.unique(np.argmax(keras_out.reshape(len(x_te), -1), axis=1))) > 1


@pytest.mark.train
@pytest.mark.csim
@pytest.mark.slow
def test_the_bireal_example_runs_and_verifies_in_both_io_types(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import zoo
    finally:
        sys.path.pop(0)
    assert zoo.main(["bireal_cnn", "--out", str(tmp_path), "--epochs", "1"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| bireal_cnn |"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[3:5] == ["0 / 0", "0 / 0"], row  # Keras = emulator = C-simulation in both io types
    assert (tmp_path / "bireal_cnn" / "hls_project" / "firmware").is_dir()
    assert (tmp_path / "bireal_cnn" / "hls_project_io_parallel" / "firmware").is_dir()
