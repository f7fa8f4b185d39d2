"""Refusals that need no Keras come before TensorFlow's seconds of start-up: a missing
configuration or run folder, an existing output folder, a missing data file, an unknown board or
an open-flow board for hls4ml, ``train CONFIG``
without ``-o``, ``--resume`` of nothing. Each is one line and exit code 2, and the process never
imported TensorFlow."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from run_folder import quick_config

from edgebnn.errors import EXIT_USER_ERROR
from edgebnn.outputs import MARKER

SCRIPT = """
import contextlib, io, json, sys
from edgebnn import cli
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(argv)
    results.append([code, err.getvalue()])
print(json.dumps([results, [m for m in ("tensorflow", "keras", "hls4ml") if m in sys.modules]]))
"""


def test_refusals_that_need_no_keras_come_before_tensorflow(tmp_path):
    cfg = quick_config(tmp_path)
    missing_data = yaml.safe_load(cfg.read_text())
    missing_data["data"] = {"dataset": "npz", "path": "nothere.npz"}
    (tmp_path / "missing_data.yaml").write_text(yaml.safe_dump(missing_data))
    for name, board in (("open_flow", "icebreaker"), ("no_board", "pynq-z3")):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({**yaml.safe_load(cfg.read_text()), "board": board}))
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / MARKER).write_text("written by edgebnn\n")
    nope, run = str(tmp_path / "nope.yaml"), str(tmp_path / "run")
    cases = {
        ("run", nope, "-o", run): "cannot read config",
        ("train", nope, "-o", run): "cannot read config",
        ("train", str(tmp_path / "no_run")): "does not exist; give a configuration file",
        ("train", str(cfg)): "name the run folder to make",
        ("train", str(cfg), "-o", run, "--resume"): "--resume continues a run folder",
        ("run", str(cfg), "-o", run, "--resume"): "does not exist, so there is no training to resume",
        ("run", str(cfg), "-o", str(tmp_path / "taken")): "already exists",
        ("train", str(cfg), "-o", str(tmp_path / "taken")): "already exists",
        ("run", str(tmp_path / "missing_data.yaml"), "-o", run): "nothere.npz: no such file",
        ("run", str(tmp_path / "open_flow.yaml"), "-o", run): "key 'board': board 'icebreaker' (iCE40UP5K-SG48I) is an ice40",
        ("train", str(tmp_path / "no_board.yaml"), "-o", run): "key 'board': unknown board 'pynq-z3' (did you mean",
        ("freeze", run): "does not exist",
        ("export", run): "does not exist",
        ("csim", run): "does not exist",
        ("verify", run): "does not exist",
        ("freeze", str(tmp_path / "taken")): "is not an edgebnn run folder",
        ("summary", nope): "cannot read config",
    }
    argvs = [list(argv) for argv in cases]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(argvs)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    results, imported = json.loads(done.stdout.splitlines()[-1])
    for (argv, expected), (code, err) in zip(cases.items(), results):
        assert code == EXIT_USER_ERROR, (argv, err)
        assert len(err.splitlines()) == 1 and err.startswith("edgebnn: error: ") and expected in err, (argv, err)
    assert imported == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "missing_data.yaml", "no_board.yaml", "open_flow.yaml", "quick.yaml", "taken"
    ]  # fmt: skip
