"""Side-by-side speed of the digits BNN pipeline, measured in one run.

1. Emulator throughput over hls4ml C-simulation ``predict`` on the same inputs (target >= 100x).
2. One QAT training epoch over the same epoch of the same model built from plain Keras layers
   (target <= 1.2x).

    python bench/pipeline_bench.py
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np

import edgebnn
from edgebnn.config import build_model, load_config
from edgebnn.data import load_dataset

ROOT = pathlib.Path(__file__).resolve().parent.parent


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def plain_keras_twin(model):
    """The same architecture from plain Keras layers (no quantizers)."""
    layers = [keras.Input(model.inputs[0].shape[1:])]
    for layer in model.layers:
        if isinstance(layer, edgebnn.layers.QuantDense):
            layers.append(keras.layers.Dense(layer.units, use_bias=layer.use_bias))
        elif isinstance(layer, keras.layers.BatchNormalization):
            layers.append(keras.layers.BatchNormalization(momentum=layer.momentum))
    return keras.Sequential(layers)


def epoch_time(model, x, y, batch_size):
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(x, y, epochs=1, batch_size=batch_size, verbose=0)  # build and trace
    return best_of(lambda: model.fit(x, y, epochs=1, batch_size=batch_size, verbose=0), 5)


def main():
    config = load_config(ROOT / "examples" / "digits_bnn.yaml")
    x_tr, y_tr, x_te, _ = load_dataset(**config["data"])
    model = build_model(config, x_tr.shape[1:])
    batch = config["train"]["batch_size"]

    t_qat = epoch_time(model, x_tr, y_tr, batch)
    t_plain = epoch_time(plain_keras_twin(model), x_tr, y_tr, batch)

    graph = edgebnn.freeze(model)
    with tempfile.TemporaryDirectory() as tmp:
        board = {"name": "pynq-z2", "part": "xc7z020clg400-1", "clock_period_ns": 10.0}
        project = edgebnn.export(graph, pathlib.Path(tmp) / "prj", board=board)
        project.compile()
        x = x_te.astype(np.float64)
        t_csim = best_of(lambda: project.predict(x), 3)
        t_emu = best_of(lambda: edgebnn.emulate(graph, x), 20)
        assert np.array_equal(project.predict(x), edgebnn.emulate(graph, x)), "C-sim and emulator disagree"

    n = len(x_te)
    print(f"digits BNN, {n} test samples")
    print(f"  emulator   {n / t_emu:>12,.0f} samples/s")
    print(f"  C-sim      {n / t_csim:>12,.0f} samples/s")
    print(f"  emulator / C-simulation throughput: {t_csim / t_emu:.1f}x  (target >= 100x)")
    print(f"  QAT epoch {t_qat * 1e3:.1f} ms, plain Keras epoch {t_plain * 1e3:.1f} ms")
    print(f"  QAT epoch / plain Keras epoch: {t_qat / t_plain:.2f}x  (target <= 1.2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
