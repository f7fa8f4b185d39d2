"""The package's layout: a model saved by edgebnn 0.3.0 (whose Keras config names the modules
``edgebnn.layers``, ``edgebnn.quantizers`` and ``edgebnn.constraints``) loads and predicts the
same, with Keras's own ``load_model`` after ``import edgebnn`` and with ``edgebnn.load_model``."""

import json
import pathlib
import subprocess
import sys
import zipfile

import pytest

SAVED = pathlib.Path(__file__).resolve().parent / "saved"


def test_the_saved_model_names_the_old_modules():
    config = zipfile.ZipFile(SAVED / "layers_0.3.0.keras").read("config.json").decode()
    modules = {word for word in json.dumps(json.loads(config)).split('"') if word.startswith("edgebnn.")}
    assert modules == {"edgebnn.layers", "edgebnn.quantizers", "edgebnn.constraints"}


@pytest.mark.parametrize("load", ["keras.models.load_model", "edgebnn.load_model"])
def test_a_model_saved_before_loads_and_predicts_the_same(load):
    code = (
        "import numpy as np, edgebnn, keras\n"
        f"m = {load}({str(SAVED / 'layers_0.3.0.keras')!r})\n"
        f"data = np.load({str(SAVED / 'layers_0.3.0.npz')!r})\n"
        "got = keras.ops.convert_to_numpy(m(data['x'], training=False))\n"
        "print(type(m.layers[0]).__name__, np.array_equal(got, data['y']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "QuantConv2D True"
