"""edgebnn.train: checkpoints, resume bit for bit, early stopping, learning-rate schedules, Ctrl-C."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def digits():
    from edgebnn.data import load_dataset

    x_tr, y_tr, x_te, y_te = load_dataset("digits", test_fraction=0.2, seed=0)
    return x_tr[:480], y_tr[:480], x_te[:160], y_te[:160]


def build(kind: str):
    from edgebnn import quantizers as q
    from edgebnn.layers import QuantDense

    keras.utils.set_random_seed(3)
    inp = keras.Input((64,), name="pixels")
    first = q.QuantizedBits(4, 0, keep_negative=False, use_stochastic_rounding=kind == "stochastic")
    h = QuantDense(16, input_quantizer=first, kernel_quantizer="ste_sign", use_bias=False, name="hidden")(inp)
    h = keras.layers.BatchNormalization(name="bn")(h)
    if kind == "stochastic":
        h = keras.layers.Dropout(0.2, name="drop")(h)
    out = QuantDense(10, input_quantizer="ste_sign", kernel_quantizer="ste_sign", name="logits")(h)
    return keras.Model(inp, out, name=f"tiny_{kind}")


def fit(model, data, folder=None, resume=False, **kwargs):
    from edgebnn.train import train

    x_tr, y_tr, x_va, y_va = data
    options = {"epochs": 4, "batch_size": 64, "learning_rate": 0.01, "learning_rate_decay": 0.9, "seed": 5}
    options.update(kwargs)
    return train(model, x_tr, y_tr, log=lambda line: None, checkpoint_dir=folder, resume=resume, **options)


class StopAt(keras.callbacks.Callback):
    """Ctrl-C in the middle of an epoch: at batch 3 of the call that trains epoch ``epoch`` (1-based)."""

    def __init__(self, epoch: int):
        super().__init__()
        self.epoch = epoch
        self.current = None

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch + 1

    def on_train_batch_end(self, batch, logs=None):
        if self.current == self.epoch and batch == 2:
            raise KeyboardInterrupt


def assert_same_state(a, b):
    assert len(a.variables) == len(b.variables)
    for va, vb in zip(a.variables, b.variables):
        assert np.array_equal(keras.ops.convert_to_numpy(va.value), keras.ops.convert_to_numpy(vb.value)), va.path
    for va, vb in zip(a.optimizer.variables, b.optimizer.variables):
        assert np.array_equal(keras.ops.convert_to_numpy(va.value), keras.ops.convert_to_numpy(vb.value)), va.path


@pytest.mark.parametrize(
    "kind, optimizer, validation",
    [("plain", "adam", False), ("plain", "bop", True), ("stochastic", "adam", True)],
)
def test_interrupted_then_resumed_equals_uninterrupted(digits, tmp_path, kind, optimizer, validation):
    from edgebnn.train import TrainingInterrupted

    x_tr, y_tr, x_va, y_va = digits
    extra = {"optimizer": optimizer, "bop_gamma": 1e-3}
    if validation:
        extra["validation"] = (x_va, y_va)
        extra["restore_best"] = False  # compare the last epoch's weights
    whole = fit(build(kind), digits, tmp_path / "whole", **extra)

    with pytest.raises(TrainingInterrupted) as info:
        fit(build(kind), digits, tmp_path / "cut", callbacks=[StopAt(3)], **extra)
    assert info.value.epoch == 2 and info.value.epochs == 4
    assert info.value.checkpoint_dir == str(tmp_path / "cut")
    state = json.loads((tmp_path / "cut" / "state.json").read_text())
    assert state["epoch"] == 2 and state["history"]["epoch"] == [1, 2]
    assert sorted(p.name for p in (tmp_path / "cut").iterdir()) == sorted(
        ["last.keras", "state.json"] + (["best.keras"] if validation else [])
    )  # no temporary file left
    if kind == "stochastic":
        assert len(state["rng"]) == 2  # the quantizer's and Dropout's generators

    resumed = fit(build(kind), digits, tmp_path / "cut", resume=True, **extra)
    assert resumed.epochs_run == 4
    assert_same_state(whole.model, resumed.model)
    assert resumed.history == whole.history
    assert whole.history["epoch"] == [1, 2, 3, 4]
    assert (not validation) == ("val_loss" not in whole.history)


def test_keras_does_not_keep_generator_states_but_the_checkpoint_does(digits, tmp_path):
    """Why state.json carries the generators: a loaded .keras starts its SeedGenerators afresh."""
    from edgebnn.train import _rng_state

    result = fit(build("stochastic"), digits, tmp_path, epochs=1)
    saved = json.loads((tmp_path / "state.json").read_text())["rng"]
    assert saved == _rng_state(result.model)
    loaded = keras.saving.load_model(tmp_path / "last.keras", safe_mode=True)
    assert _rng_state(loaded) != saved


def test_old_call_without_new_keywords(digits):
    """The call of earlier versions still trains and returns the curves (Keras' History shape kept per key)."""
    from edgebnn.train import train

    x_tr, y_tr, _, _ = digits
    seen = []
    result = train(build("plain"), x_tr, y_tr, epochs=2, batch_size=64, learning_rate=0.01, seed=1, log=seen.append)
    assert result.history["epoch"] == [1, 2] and len(result.history["loss"]) == 2
    assert result.best_epoch is None and result.stopped_early is False and result.epochs_run == 2
    assert len(seen) == 2 and seen[0].startswith("  epoch   1/2  loss ")
    again = train(build("plain"), x_tr, y_tr, epochs=2, batch_size=64, learning_rate=0.01, seed=1, log=seen.append)
    assert_same_state(result.model, again.model)


def test_early_stopping_stops_and_restores_the_best(digits, tmp_path):
    x_tr, y_tr, x_va, y_va = digits
    calls = []
    result = fit(
        build("plain"),
        digits,
        tmp_path,
        epochs=30,
        learning_rate=0.05,
        learning_rate_decay=1.0,
        validation=(x_va, y_va),
        early_stopping={"monitor": "val_loss", "patience": 2},
        progress=lambda e, n, logs: calls.append((e, n, sorted(logs))),
    )
    h = result.history
    assert result.stopped_early and h["stopped_early"]
    n = result.epochs_run
    assert n < 30 and h["epoch"] == list(range(1, n + 1))
    best = int(np.argmin(h["val_loss"])) + 1
    assert result.best_epoch == h["best_epoch"] == best == n - 2  # patience 2: two epochs without improvement
    assert calls == [(e, 30, ["accuracy", "loss", "val_accuracy", "val_loss"]) for e in range(1, n + 1)]
    best_model = keras.saving.load_model(tmp_path / "best.keras", safe_mode=True)
    for a, b in zip(result.model.get_weights(), best_model.get_weights()):
        assert np.array_equal(a, b)
    last = keras.saving.load_model(tmp_path / "last.keras", safe_mode=True)
    assert not all(np.array_equal(a, b) for a, b in zip(last.get_weights(), best_model.get_weights()))
    loss, _ = result.model.evaluate(x_va, y_va, verbose=0)
    assert np.isclose(loss, h["val_loss"][best - 1], rtol=1e-5)


@pytest.mark.parametrize(
    "schedule, options, expected",
    [
        ("exponential", {"learning_rate_decay": 0.5}, [0.08, 0.04, 0.02, 0.01, 0.005, 0.0025]),
        ("constant", {"learning_rate_decay": 0.5}, [0.08] * 6),
        ("step", {"lr_step_epochs": 2, "lr_step_factor": 0.25}, [0.08, 0.08, 0.02, 0.02, 0.005, 0.005]),
        ("cosine", {}, [0.08 * (1 + np.cos(np.pi * e / 6)) / 2 for e in range(6)]),
        # after the warmup the schedule starts from its own epoch 0 (t = e - W): the first epoch after it runs at the full rate
        ("cosine", {"warmup_epochs": 2}, [0.04, 0.08] + [0.08 * (1 + np.cos(np.pi * t / 4)) / 2 for t in range(4)]),
        ("step", {"warmup_epochs": 4, "lr_step_epochs": 1}, [0.02, 0.04, 0.06, 0.08, 0.08, 0.04]),
    ],
)
def test_learning_rate_per_epoch(digits, schedule, options, expected):
    result = fit(build("plain"), digits, epochs=6, learning_rate=0.08, lr_schedule=schedule, **options)
    rates = result.history["learning_rate"]
    assert len(rates) == 6
    assert np.allclose(rates, expected, rtol=1e-6, atol=1e-9), rates
    # the optimizer used those rates: its schedule at each epoch's first step
    lr = result.model.optimizer.learning_rate
    assert np.isclose(float(lr), expected[-1], rtol=1e-5, atol=1e-8) or float(lr) < expected[-1]


@pytest.mark.quick  # no training
def test_cosine_warmup_endpoints():
    from edgebnn.train import EpochSchedule

    s = EpochSchedule(0.1, steps_per_epoch=10, epochs=5, kind="cosine", warmup_epochs=1)
    got = [float(s(step)) for step in (0, 9, 10, 49, 50)]
    assert got[0] == got[1] == pytest.approx(0.1)  # warmup over 1 epoch: the full rate
    assert got[2] == pytest.approx(0.1) and got[3] == pytest.approx(0.1 * (1 + np.cos(np.pi * 3 / 4)) / 2)
    assert got[4] == pytest.approx(0.0, abs=1e-9)
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(s)).get_config() == s.get_config()


def test_resume_refusals(digits, tmp_path):
    from edgebnn.errors import EdgebnnError

    with pytest.raises(EdgebnnError, match=r"no checkpoint to resume from in '.*empty'.*state.json is missing"):
        fit(build("plain"), digits, tmp_path / "empty", resume=True)
    with pytest.raises(EdgebnnError, match="resume needs the checkpoint_dir"):
        fit(build("plain"), digits, None, resume=True)
    fit(build("plain"), digits, tmp_path / "run", epochs=1)
    with pytest.raises(EdgebnnError, match="made by another model, data or training arguments"):
        fit(build("plain"), digits, tmp_path / "run", resume=True, epochs=1, learning_rate=0.02)
    with pytest.raises(EdgebnnError, match="made by another model, data or training arguments"):
        fit(build("stochastic"), digits, tmp_path / "run", resume=True, epochs=1)
    (tmp_path / "run" / "state.json").write_text("{not json")
    with pytest.raises(EdgebnnError, match="is not a readable checkpoint state"):
        fit(build("plain"), digits, tmp_path / "run", resume=True, epochs=1)


def test_argument_refusals(digits):
    from edgebnn.errors import EdgebnnError

    x_tr, y_tr, x_va, y_va = digits
    with pytest.raises(EdgebnnError, match="early_stopping needs a validation set"):
        fit(build("plain"), digits, early_stopping={"patience": 2})
    with pytest.raises(EdgebnnError, match="early_stopping.monitor must be val_accuracy or val_loss, got 'loss'"):
        fit(build("plain"), digits, validation=(x_va, y_va), early_stopping={"monitor": "loss"})
    with pytest.raises(EdgebnnError, match="lr_schedule must be one of exponential, cosine, step, constant, got 'linear'"):
        fit(build("plain"), digits, lr_schedule="linear")
    with pytest.raises(EdgebnnError, match="distribute must be null, mirrored or multi_worker, got 'tpu'"):
        fit(build("plain"), digits, distribute="tpu")
