"""A real run folder in the shared layout, made through edgebnn's public API (tests/test_report.py):
a tiny binary MLP trained on digits, frozen, verified (Keras = emulator) and estimated on the run's
board and on every board profile."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import yaml

CONFIG = {
    "name": "report_digits",
    "board": "pynq-z2",
    "data": {"dataset": "digits", "test_fraction": 0.2, "seed": 0},
    "model": [
        {
            "QuantDense": {
                "units": 24,
                "input_quantizer": "quantized_bits(8, 0, keep_negative=False)",
                "kernel_quantizer": "ste_sign",
                "kernel_constraint": "weight_clip(1.0)",
                "use_bias": False,
            }
        },
        {"BatchNormalization": {"momentum": 0.9}},
        {
            "QuantDense": {
                "units": 10,
                "input_quantizer": "ste_sign",
                "kernel_quantizer": "ste_sign",
                "kernel_constraint": "weight_clip(1.0)",
                "use_bias": False,
            }
        },
        {"BatchNormalization": {"momentum": 0.9}},
        {"QuantActivation": {"quantizer": "quantized_bits(5, 3)"}},
    ],
    "train": {"epochs": 4, "batch_size": 64, "optimizer": "adam", "learning_rate": 0.01, "learning_rate_decay": 0.9, "seed": 0},
    "export": {"backend": "Vitis", "io_type": "io_parallel", "strategy": "Latency", "reuse_factor": 1},
}


def write_json(path: pathlib.Path, data) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def make_run(folder: pathlib.Path) -> dict:
    """Train, freeze, verify and estimate into ``folder``; returns what the tests recompute from:
    ``config``, ``graph``, ``report`` (the VerifyReport), ``y_test``, ``history`` and
    ``estimates`` (board name -> Estimate)."""
    import keras

    from edgebnn.boards import list_boards, load_board
    from edgebnn.config import build_model, check_config, target_of
    from edgebnn.data import load_dataset
    from edgebnn.estimate import estimate
    from edgebnn.freeze import freeze
    from edgebnn.outputs import MARKER
    from edgebnn.train import train
    from edgebnn.verify import verify

    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("written by edgebnn\n")
    (folder / "config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False), encoding="utf-8")
    config = check_config(CONFIG)
    d = config["data"]
    x_tr, y_tr, x_te, y_te = load_dataset(d["dataset"], d["test_fraction"], d["seed"])
    keras.utils.set_random_seed(0)
    model = build_model(config, x_tr.shape[1:])
    t = config["train"]
    fit = train(
        model,
        x_tr,
        y_tr,
        epochs=t["epochs"],
        batch_size=t["batch_size"],
        learning_rate=t["learning_rate"],
        learning_rate_decay=t["learning_rate_decay"],
        seed=t["seed"],
        log=lambda line: None,
    )
    history = fit.history  # history.json's content: epoch, loss, accuracy, learning_rate, best_epoch, stopped_early
    n = len(history["loss"])
    # train()'s ExponentialDecay steps once per epoch's batches: epoch e starts at rate * decay**e
    rates = [t["learning_rate"] * t["learning_rate_decay"] ** e for e in range(n)]
    assert history["epoch"] == list(range(1, n + 1)) and np.allclose(history["learning_rate"], rates, rtol=1e-6)
    model = fit.model
    write_json(folder / "history.json", history)
    model.save(folder / "model.keras")

    graph = freeze(model, name=config["name"])
    graph.save(folder / "graph.npz")

    report = verify(model, graph, x_te)
    d = report.to_dict()
    emu = report.outputs["emulator"]
    pred = np.argmax(emu.reshape(len(emu), -1), axis=1)
    classes = int(np.prod(emu.shape[1:]))
    matrix = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(matrix, (y_te.astype(np.int64), pred), 1)
    acc = {k: float(np.mean(np.argmax(report.outputs[k].reshape(len(y_te), -1), axis=1) == y_te)) for k in ("keras", "emulator")}
    write_json(
        folder / "verify.json",
        {
            "samples": d["samples"],
            "mismatches": {"keras_vs_emulator": d["keras_vs_emulator"], "emulator_vs_csim": None},
            "first_mismatches": d["first_mismatches"],
            "stream_leftovers": d["stream_leftovers"],
            "keras_caveats": d["keras_caveats"],
            "accuracy": {**acc, "csim": None},
            "deployed": "emulator",
            "classes": classes,
            "confusion_matrix": matrix.tolist(),
        },
    )

    board = load_board(config["board"])
    boards = [board] + [b for b in list_boards() if b.name != board.name and b.hls4ml]
    estimates = {b.name: estimate(graph, b, target=target_of(config, b)) for b in boards}
    write_json(folder / "estimate.json", {"board": board.name, "estimates": {k: e.to_dict() for k, e in estimates.items()}})
    write_json(
        folder / "run.json",
        {
            "versions": {"edgebnn": "test", "keras": keras.__version__},
            "stages": {s: {"finished": "2026-01-01T00:00:00+00:00", "seconds": 1.0, "inputs": {}} for s in ("train", "freeze")},
        },
    )
    write_json(folder / "summary.json", {"name": config["name"], "board": board.name})
    return {"config": config, "graph": graph, "report": report, "y_test": y_te, "history": history, "estimates": estimates}


EXAMPLE = str(pathlib.Path(__file__).resolve().parent.parent / "examples" / "digits_bnn.yaml")


def quick_config(folder, epochs=2, **export):
    """examples/digits_bnn.yaml with ``epochs`` and 16 units in its hidden layers (a short
    training and C-simulation build), the ``export`` keys given, written as folder/quick.yaml."""
    config = yaml.safe_load(pathlib.Path(EXAMPLE).read_text())
    config["train"]["epochs"] = epochs
    for layer in config["model"]:
        if layer.get("QuantDense", {}).get("units") == 128:
            layer["QuantDense"]["units"] = 16
    config["export"].update(export)
    path = folder / "quick.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def one_line_error(capsys) -> str:
    """The one line a refused command wrote on stderr."""
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    return err.strip()
