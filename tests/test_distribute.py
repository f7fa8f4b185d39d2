"""Training under tf.distribute: TF_CONFIG checked in one line, and two workers of a
MultiWorkerMirroredStrategy on 127.0.0.1 (each a process of its own, as on two hosts) training one
model that freezes and verifies bit for bit."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import yaml
from run_folder import EXAMPLE, quick_config

from edgebnn import cli, distribute
from edgebnn.errors import EXIT_OK

WORKER_TIMEOUT = 600  # seconds for one training of two workers (about 30 s on 2 cores)


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _tf_config(ports: list[int], index: int) -> str:
    return json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]}, "task": {"type": "worker", "index": index}})


def _run_workers(commands: list[list[str]], cwd) -> list[subprocess.CompletedProcess]:
    """Run one command per worker at once, each with its TF_CONFIG; every process is ended at
    the timeout, so a worker waiting for a peer that died cannot hang the suite."""
    ports = _free_ports(len(commands))
    procs = []
    for index, command in enumerate(commands):
        env = dict(os.environ, TF_CONFIG=_tf_config(ports, index), OMP_NUM_THREADS="1", CI="true")
        procs.append(subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=WORKER_TIMEOUT)
            results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return results


# ------------------------------------------------------------------------------ TF_CONFIG
@pytest.mark.parametrize(
    "value, message",
    [
        (None, "multi_worker needs the TF_CONFIG environment variable on every host"),
        ("{not json", "TF_CONFIG is not valid JSON"),
        ("[1, 2]", "TF_CONFIG must be a JSON object with keys cluster and task"),
        ('{"task": {"type": "worker", "index": 0}}', 'TF_CONFIG has no "cluster" mapping'),
        ('{"cluster": {"ps": ["h:1"]}, "task": {}}', "cluster job 'ps' is not used by multi_worker"),
        ('{"cluster": {"worker": ["h1"]}, "task": {}}', """cluster["worker"] must be a non-empty list of "host:port\""""),
        ('{"cluster": {"worker": ["h:70000"]}, "task": {}}', """cluster["worker"] must be a non-empty list"""),
        ('{"cluster": {"chief": ["a:1", "b:2"], "worker": ["c:3"]}, "task": {}}', 'cluster["chief"] must name exactly one host'),
        ('{"cluster": {"worker": ["a:1"]}}', 'TF_CONFIG has no "task" mapping'),
        ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}}', "task type 'chief' is not a job"),
        ('{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 2}}', "task index 2 is not one of the 2"),
        ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": true}}', "task index True is not one of"),
    ],
)
def test_a_bad_tf_config_is_named_in_one_line(monkeypatch, value, message):
    if value is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", value)
    with pytest.raises(distribute.DistributeError) as err:
        distribute.tf_config()
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "cluster, task, chief",
    [
        ({"worker": ["a:1", "b:2"]}, {"type": "worker", "index": 0}, True),  # no chief job: worker 0 is the chief
        ({"worker": ["a:1", "b:2"]}, {"type": "worker", "index": 1}, False),
        ({"chief": ["c:3"], "worker": ["a:1"]}, {"type": "chief", "index": 0}, True),
        ({"chief": ["c:3"], "worker": ["a:1"]}, {"type": "worker", "index": 0}, False),
    ],
)
def test_only_the_chief_writes(monkeypatch, cluster, task, chief):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": task}))
    assert distribute.is_chief() is chief


def test_a_run_on_several_workers_without_tf_config_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    config = yaml.safe_load(pathlib.Path(EXAMPLE).read_text())
    config["train"]["distribute"] = "multi_worker"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert cli.main(["train", str(tmp_path / "c.yaml"), "-o", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs the TF_CONFIG environment variable" in err
    assert sorted(os.listdir(tmp_path)) == ["c.yaml"]


@pytest.mark.slow
def test_a_host_whose_peers_never_start_stops_after_worker_timeout_in_one_line(tmp_path):
    """TensorFlow would wait forever, inside a call that neither Ctrl-C nor SIGTERM ends."""
    config = yaml.safe_load(pathlib.Path(EXAMPLE).read_text())
    config["train"].update({"distribute": "multi_worker", "worker_timeout": 3})
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "edgebnn", "train", "c.yaml", "-o", "run"]
    ports = _free_ports(2)
    env = dict(os.environ, TF_CONFIG=_tf_config(ports, 0), CI="true")
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=WORKER_TIMEOUT)
    assert done.returncode == 2
    error = [line for line in done.stderr.splitlines() if line.startswith("edgebnn: error:")]
    assert len(error) == 1 and f"worker 0 waited 3 s for worker 1 (127.0.0.1:{ports[1]})" in error[0], done.stderr[-2000:]
    assert "raise train.worker_timeout" in error[0]
    assert sorted(os.listdir(tmp_path)) == ["c.yaml"]


# ------------------------------------------------------------------------ two workers
# Each worker trains through edgebnn.train with Bop, Dropout, a stochastic-rounding quantizer and
# BatchNormalization (1001 samples: every epoch ends with a batch of one sample, so one replica
# gets none), then saves its weights, its generator states and one stochastic draw of its
# own replica (as the replicated loop's steps draw them).
WORKER_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, time
    import numpy as np
    from edgebnn import distribute
    strategy = distribute.strategy("multi_worker")  # before any other TensorFlow work
    import keras
    import tensorflow as tf
    from sklearn.datasets import load_digits
    from edgebnn import layers as q, train as T
    from edgebnn.train import _rng_state

    index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
    digits = load_digits()
    x, y = (digits.data / 16).astype("float32"), digits.target.astype("int32")

    def build():
        return keras.Sequential([
            keras.Input((64,)),
            q.QuantDense(24, input_quantizer="quantized_bits(8,0,keep_negative=False)", kernel_quantizer="ste_sign",
                         use_bias=False),
            keras.layers.BatchNormalization(),
            keras.layers.Dropout(0.1),
            q.QuantActivation("quantized_bits(3,1,use_stochastic_rounding=True)", name="stochastic"),
            q.QuantDense(10, kernel_quantizer="ste_sign", use_bias=False),
            keras.layers.BatchNormalization(),
            q.QuantActivation("quantized_bits(5,3)"),
        ])

    result = T.train(build, x[:1001], y[:1001], epochs=2, batch_size=50, optimizer="bop", seed=3,
                     distribute="multi_worker", validation=(x[1000:1200], y[1000:1200]), log=lambda line: None)
    model = result.model
    quantizer = model.get_layer("stochastic").quantizer
    draws = strategy.run(tf.function(lambda: quantizer._draws(tf.zeros((4, 24)), True)))
    local = [np.asarray(v) for v in strategy.experimental_local_results(draws)]
    np.savez(sys.argv[1], draws=local[0], *[np.asarray(w) for w in model.get_weights()])
    with open(sys.argv[1] + ".json", "w") as fh:
        json.dump({"rng": _rng_state(model), "history": result.history}, fh)
    if index == 0:
        model.save(sys.argv[2])

    # the same training interrupted (Ctrl-C on every host) after epoch 1, then resumed from the
    # chief's checkpoint: the weights of the uninterrupted run
    class Stop(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt

    arguments = dict(epochs=2, batch_size=50, optimizer="bop", seed=3, distribute="multi_worker",
                     validation=(x[1000:1200], y[1000:1200]), log=lambda line: None, checkpoint_dir=sys.argv[3])
    try:
        T.train(build, x[:1001], y[:1001], callbacks=[Stop()], **arguments)
    except T.TrainingInterrupted as stop:
        assert stop.epoch == 1, stop.epoch
    else:
        raise SystemExit("the training was not interrupted")
    # hosts resume with a later command; here the other worker waits for the chief's checkpoint
    state = os.path.join(sys.argv[3], "state.json")
    for _ in range(1200):
        if os.path.isfile(state) and json.load(open(state))["epoch"] == 1:
            break
        time.sleep(0.1)
    resumed = T.train(build, x[:1001], y[:1001], resume=True, **arguments).model
    np.savez(sys.argv[1] + ".resumed.npz", *[np.asarray(w) for w in resumed.get_weights()])

    # worker 1 dies at the start of epoch 1: worker 0 stops with one line instead of hanging
    class Die(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 1 and index == 1:
                os._exit(0)

    del arguments["checkpoint_dir"]
    try:
        T.train(build, x[:1001], y[:1001], callbacks=[Die()], **arguments)
    except distribute.DistributeError as err:
        with open(sys.argv[1] + ".stopped.txt", "w") as fh:
            fh.write(str(err))
    """
)


@pytest.mark.train
@pytest.mark.slow
def test_two_workers_hold_one_model_that_freezes_and_verifies(tmp_path):
    import keras

    from edgebnn import optimizers  # noqa: F401  (registers Bop for loading)
    from edgebnn.freeze import freeze
    from edgebnn.verify import verify

    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT)
    model_path = tmp_path / "model.keras"
    outs = [tmp_path / f"worker{i}.npz" for i in range(2)]
    checkpoints = tmp_path / "checkpoints"  # the chief's; the other worker resumes from it too (one file system)
    results = _run_workers([[sys.executable, str(script), str(o), str(model_path), str(checkpoints)] for o in outs], tmp_path)
    for r in results:
        assert r.returncode == 0, r.stderr[-3000:]
    a, b = (np.load(o) for o in outs)
    weights = [k for k in a.files if k != "draws"]
    assert weights and all(np.array_equal(a[k], b[k]) for k in weights)  # every replica holds the same weights
    states = [json.loads(pathlib.Path(f"{o}.json").read_text()) for o in outs]
    assert states[0]["rng"] == states[1]["rng"]  # and the same generator states
    assert states[0]["history"] == states[1]["history"] and len(states[0]["history"]["loss"]) == 2
    assert states[0]["history"]["accuracy"][-1] > 0.5  # it learned from the whole global batch
    # each replica rounds its share of the batch with draws of its own, from the same state
    assert a["draws"].shape == (4, 24) and not np.array_equal(a["draws"], b["draws"])
    stopped = pathlib.Path(f"{outs[0]}.stopped.txt").read_text()  # worker 0, after worker 1 died
    assert stopped.startswith("distribute: another task of the cluster stopped during training") and "\n" not in stopped
    for o in outs:  # interrupted and resumed: the uninterrupted run's weights, bit for bit
        resumed = np.load(f"{o}.resumed.npz")
        assert all(np.array_equal(resumed[f"arr_{i}"], a[f"arr_{i}"]) for i in range(len(weights)))

    from sklearn.datasets import load_digits

    model = keras.models.load_model(model_path, safe_mode=True)
    x = (load_digits().data[1200:1400] / 16).astype("float32")
    result = verify(model, freeze(model), x)
    assert result.samples == 200 and result.keras_vs_emulator == 0


@pytest.mark.train
@pytest.mark.csim
@pytest.mark.slow
def test_edgebnn_train_on_two_workers_then_the_stages_verify_bit_for_bit(tmp_path, capsys):
    config = yaml.safe_load(quick_config(tmp_path, epochs=2).read_text())
    (tmp_path / "quick.yaml").unlink()
    config["train"].update({"distribute": "multi_worker", "optimizer": "bop"})
    config["data"]["validation_fraction"] = 0.1
    (tmp_path / "mw.yaml").write_text(yaml.safe_dump(config))
    run = tmp_path / "run"
    command = [sys.executable, "-m", "edgebnn", "train", "mw.yaml", "-o", str(run)]
    chief, worker = _run_workers([command, command], tmp_path)
    assert chief.returncode == 0 and worker.returncode == 0, (chief.stderr + worker.stderr)[-3000:]
    assert "trained with the other workers; the chief wrote the run folder" in worker.stderr + worker.stdout
    assert sorted(os.listdir(tmp_path)) == ["mw.yaml", "run"]  # one run folder, the chief's
    history = json.loads((run / "history.json").read_text())
    assert history["epoch"] == [1, 2] and len(history["val_accuracy"]) == 2
    for stage in ("freeze", "export", "csim", "verify"):
        assert cli.main([stage, str(run)]) == EXIT_OK, stage
    out = capsys.readouterr()
    assert "VERIFIED bit for bit" in out.out + out.err
    assert "Keras vs emulator 0, emulator vs C-simulation 0" in out.out + out.err


@pytest.mark.train
def test_mirrored_training_runs_the_replicated_loop_and_its_model_verifies():
    """One host's devices (here the CPU alone): edgebnn's loop, not Keras's fit, trains it."""
    import keras
    from sklearn.datasets import load_digits

    from edgebnn import layers as q
    from edgebnn.freeze import freeze
    from edgebnn.train import train
    from edgebnn.verify import verify

    digits = load_digits()
    x, y = (digits.data / 16).astype("float32"), digits.target.astype("int32")

    def build():
        return keras.Sequential(
            [
                keras.Input((64,)),
                q.QuantDense(16, input_quantizer="quantized_bits(8,0,keep_negative=False)", kernel_quantizer="ste_sign"),
                keras.layers.BatchNormalization(),
                q.QuantActivation("ste_sign"),
                q.QuantDense(10, kernel_quantizer="ste_sign", use_bias=False),
                keras.layers.BatchNormalization(),
                q.QuantActivation("quantized_bits(5,3)"),
            ]
        )

    fits = []
    original_fit = keras.Model.fit
    keras.Model.fit = lambda self, *a, **k: fits.append(1) or original_fit(self, *a, **k)
    try:
        result = train(build, x[:1000], y[:1000], epochs=3, batch_size=50, distribute="mirrored", log=lambda line: None)
    finally:
        keras.Model.fit = original_fit
    assert not fits and result.epochs_run == 3 and result.history["accuracy"][-1] > 0.5
    checked = verify(result.model, freeze(result.model), x[1000:1200])
    assert checked.samples == 200 and checked.keras_vs_emulator == 0
