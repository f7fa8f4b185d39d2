"""Ctrl-C during training, as a new user meets it: the command line's own process gets SIGINT, and
every hint printed afterwards is followed. No command discards the checkpoint unasked, each names
the command that keeps the work, and the resumed model equals an uninterrupted run's, weight for
weight."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from run_folder import quick_config

from edgebnn import cli
from edgebnn.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USER_ERROR

EPOCHS = 6


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    """The quick digits configuration with epochs long enough (batch size 8) to be interrupted."""
    folder = tmp_path_factory.mktemp("interrupted")
    path = quick_config(folder, epochs=EPOCHS)
    data = yaml.safe_load(path.read_text())
    data["train"]["batch_size"] = 8
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def whole(config):
    """The same configuration trained without interruption."""
    run = config.parent / "whole"
    code, out, _ = cli_run(["train", str(config), "-o", str(run)])
    assert code == EXIT_OK, out
    return run


def cli_run(argv):
    """cli.main's exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def completed_epoch(run) -> int:
    try:
        return json.loads((run / "checkpoints" / "state.json").read_text())["epoch"]
    except (OSError, ValueError, KeyError):
        return 0


def interrupt(argv, run, after: int = 0, when=None):
    """``edgebnn ARGV`` in a process of its own, sent SIGINT (Ctrl-C) once its checkpoint holds
    epoch ``after`` (or once ``when()`` is true); the last line of its stderr."""
    when = when or (lambda: completed_epoch(run) >= after)
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgebnn", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C's default action, as a shell starts a command (a suite run in the background ignores SIGINT)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        if when():
            proc.send_signal(signal.SIGINT)
            break
        time.sleep(0.05)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == EXIT_INTERRUPTED, (proc.returncode, out, err)
    return err.splitlines()[-1]


def resume_hint(line: str) -> list[str]:
    """The command an interrupt's line says to resume with, as arguments of cli.main."""
    found = re.search(r"resume with `([^`]+)`", line)
    assert found, line
    argv = shlex.split(found.group(1))
    assert argv[0] == "edgebnn"
    return argv[1:]


def checkpoint_snapshot(run):
    folder = run / "checkpoints"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def assert_same_weights(a, b):
    from edgebnn import load_model

    wa, wb = load_model(a / "model.keras").get_weights(), load_model(b / "model.keras").get_weights()
    assert len(wa) == len(wb) and wa
    for x, y in zip(wa, wb):
        assert np.array_equal(x, y)


def assert_refusals_keep_the_work(run, config, resume):
    """Every command that cannot use, or would discard, an unfinished training refuses in one line
    naming ``resume`` (the command that keeps the work), and leaves the checkpoint as it is."""
    before = checkpoint_snapshot(run)
    for argv in (["freeze", run], ["export", run], ["csim", run], ["verify", run], ["summary", run]):
        code, out, err = cli_run([str(a) for a in argv])
        assert code == EXIT_USER_ERROR, (argv, out, err)
        assert len(err.splitlines()) == 1 and f"continue it with `{resume}`" in err, (argv, err)
    code, _, err = cli_run(["train", str(run)])  # would start over from epoch 1
    assert code == EXIT_USER_ERROR
    assert f"continue it with `{resume}`" in err and f"`edgebnn train {run} --force`" in err, err
    for command in ("run", "train"):  # a new run into the same folder
        code, _, err = cli_run([command, str(config), "-o", str(run)])
        assert code == EXIT_USER_ERROR
        assert "unfinished training" in err and f"continue it with `{resume}`" in err and "--force" in err, err
    code, out, _ = cli_run(["report", str(run)])  # what the run got to, and how to go on
    assert code == EXIT_OK
    assert f"its training stopped after epoch {completed_epoch(run)} of {EPOCHS}: continue it with `{resume}`" in out, out
    training = json.loads((run / "report.json").read_text())["sections"]["training"]  # and report.html says so too
    assert training["note"] == (
        f"stopped after epoch {completed_epoch(run)} of {EPOCHS}; its last checkpoint is kept: resume with `{resume}`"
    )
    assert (
        f"stopped after epoch {completed_epoch(run)} of {EPOCHS}; its last checkpoint is kept"
        in (run / "report.html").read_text()
    )
    assert checkpoint_snapshot(run) == before
    assert not (run / "model.keras").exists()


@pytest.mark.train
@pytest.mark.csim
def test_an_interrupted_run_resumes_with_every_printed_hint(config, whole):
    run = config.parent / "run"
    line = interrupt(["run", str(config), "-o", str(run)], run, after=2)
    done = completed_epoch(run)
    assert 2 <= done < EPOCHS
    resume = f"edgebnn run {config} -o {run} --resume"
    assert line == f"edgebnn: interrupted after epoch {done} of {EPOCHS}; the last checkpoint is kept: resume with `{resume}`"
    assert resume_hint(line) == ["run", str(config), "-o", str(run), "--resume"]
    assert_refusals_keep_the_work(run, config, resume)

    line = interrupt(resume_hint(line), run, after=done + 1)  # the hint followed, and Ctrl-C once more
    again = completed_epoch(run)
    assert done < again < EPOCHS
    assert line.startswith(f"edgebnn: interrupted after epoch {again} of {EPOCHS};") and resume_hint(line)[0] == "run", line
    assert_refusals_keep_the_work(run, config, resume)

    code, out, err = cli_run(resume_hint(line))
    assert code == EXIT_OK, (out, err)
    assert f"resuming digits_bnn at epoch {again + 1} of {EPOCHS}" in out and "VERIFIED bit for bit" in out, out
    assert_same_weights(run, whole)
    assert json.loads((run / "history.json").read_text()) == json.loads((whole / "history.json").read_text())
    assert cli_run(["train", str(run)])[0] == EXIT_OK  # finished: training it again discards nothing unfinished


@pytest.mark.train
@pytest.mark.csim
def test_an_interrupted_train_resumes_with_its_own_command(config, whole):
    run = config.parent / "trained"
    line = interrupt(["train", str(config), "-o", str(run)], run, after=1)
    resume = f"edgebnn train {run} --resume"
    assert line.endswith(f"the last checkpoint is kept: resume with `{resume}`"), line
    assert_refusals_keep_the_work(run, config, resume)
    code, out, err = cli_run(resume_hint(line))
    assert code == EXIT_OK, (out, err)
    assert f"next: `edgebnn freeze {run}`" in out
    assert_same_weights(run, whole)

    # the whole run's command on the trained folder, interrupted past its training (in export)
    line = interrupt(["run", str(config), "-o", str(run), "--resume"], run, when=(run / "graph.npz").exists)
    resume = f"edgebnn run {config} -o {run} --resume"
    assert line == f"edgebnn: interrupted; the trained model and every finished stage are kept: continue with `{resume}`"
    assert_same_weights(run, whole)
    code, out, err = cli_run(shlex.split(resume)[1:])
    assert code == EXIT_OK and "VERIFIED bit for bit" in out, (out, err)
    assert f"already trained all {EPOCHS} epochs; nothing to do" in out


@pytest.mark.train
def test_force_starts_an_unfinished_training_over(config, tmp_path):
    """``train RUN --force`` is the one way to discard the checkpoint: it trains from epoch 1."""
    run = tmp_path / "run"
    line = interrupt(["train", str(config), "-o", str(run)], run, after=1)
    assert "resume with" in line
    code, out, err = cli_run(["train", str(run), "--force", "-q"])
    assert code == EXIT_OK, (out, err)
    assert json.loads((run / "history.json").read_text())["epoch"] == list(range(1, EPOCHS + 1))
    assert os.path.isfile(run / "model.keras")


def test_which_checkpoints_hold_an_unfinished_training(tmp_path):
    """What counts as unfinished, from the files alone (no training): a checkpoint before its last
    epoch, or a finished one whose model.keras was not written; the hint is the one recorded."""
    from edgebnn.outputs import MARKER
    from edgebnn.runfolder import RunFolder

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / MARKER).write_text("written by edgebnn\n")
    (run / "config.yaml").write_text(quick_config(tmp_path, epochs=EPOCHS).read_text())
    resume = f"edgebnn run {tmp_path / 'quick.yaml'} -o {run} --resume"

    def state(epoch, stopped=False, model=False, recorded=None):
        (run / "checkpoints" / "state.json").write_text(json.dumps({"epoch": epoch, "epochs": EPOCHS, "stopped_early": stopped}))
        stages = {} if recorded is None else {"train": {"epochs": recorded, "inputs": {}}}
        (run / "run.json").write_text(json.dumps({"resume": resume, "stages": stages}))
        if model:
            (run / "model.keras").write_text("")
        elif (run / "model.keras").exists():
            (run / "model.keras").unlink()
        return RunFolder(run).unfinished_training()

    assert state(2) == {"epoch": 2, "epochs": EPOCHS, "resume": resume}
    assert state(EPOCHS) is not None  # every epoch done, but model.keras not written yet
    assert state(EPOCHS, model=True, recorded=EPOCHS) is None
    assert state(3, stopped=True, model=True, recorded=3) is None  # stopped early: finished
    assert state(2, model=True, recorded=EPOCHS) is not None  # trained again and interrupted: the old model stays
    state(2)
    (run / "checkpoints" / "state.json").write_text("{")  # unreadable: nothing to keep, nothing to refuse
    assert RunFolder(run).unfinished_training() is None
    state(2)
    code, _, err = cli_run(["freeze", str(run)])  # refused before TensorFlow, with the recorded command
    assert code == EXIT_USER_ERROR and f"stopped after epoch 2 of {EPOCHS}; continue it with `{resume}`" in err, err
    code, _, err = cli_run(["train", str(run)])
    assert code == EXIT_USER_ERROR and "would discard" in err and "--force`" in err, err
