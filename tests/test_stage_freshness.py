"""The stage commands over a run folder, as a new user meets them: what is refused before training,
what is refused as out of date (every stage that reads another's output, report and verify
included), what a finished run's --resume does, and what each stage says (also with --quiet)."""

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml
from run_folder import one_line_error, quick_config

from edgebnn import cli
from edgebnn.errors import EXIT_OK, EXIT_USER_ERROR


def snapshot(folder):
    """Every file under ``folder`` with its bytes' digest and modification time."""
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, folder)] = (hashlib.sha256(fh.read()).hexdigest(), os.stat(path).st_mtime_ns)
    return out


def run_cli(argv):
    """cli.main's exit code and what it printed on stdout."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(argv)
    return code, buf.getvalue()


# ---------------------------------------------------------------------- refused before training
def test_a_model_whose_output_is_not_flat_is_refused_before_training(tmp_path, capsys):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(40, 8, 8)).astype(np.uint8)
    np.savez(tmp_path / "d.npz", x_train=images, y_train=rng.integers(0, 4, size=40))
    config = {
        "data": {"dataset": "npz", "path": "d.npz", "scale": 1 / 256},
        "model": [  # no Flatten: the output is (8, 4) per sample
            {
                "QuantDense": {
                    "units": 4,
                    "input_quantizer": "quantized_bits(8, 0, keep_negative=False)",
                    "kernel_quantizer": "ste_sign",
                    "use_bias": False,
                }
            }
        ],
        "train": {"epochs": 1},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    assert cli.main(["train", str(tmp_path / "c.yaml"), "-o", str(tmp_path / "run")]) == EXIT_USER_ERROR
    line = one_line_error(capsys)
    assert "c.yaml: key 'model': the model's output has shape (8, 4) per sample" in line, line
    assert "add a Flatten" in line and "internal error" not in line
    assert sorted(os.listdir(tmp_path)) == ["c.yaml", "d.npz"]


def test_an_unknown_board_names_the_config_file_and_key(tmp_path, capsys):
    cfg = quick_config(tmp_path, epochs=1)
    config = yaml.safe_load(cfg.read_text())
    config["board"] = "pynq-z3"
    cfg.write_text(yaml.safe_dump(config))
    assert cli.main(["train", str(cfg), "-o", str(tmp_path / "run")]) == EXIT_USER_ERROR
    line = one_line_error(capsys)
    expected = f"edgebnn: error: {cfg}: key 'board': unknown board 'pynq-z3' (did you mean 'pynq-z2'?); known boards are "
    assert line.startswith(expected), line
    assert sorted(os.listdir(tmp_path)) == ["quick.yaml"]


def test_a_folder_that_is_not_a_run_folder_suggests_a_command_that_works(tmp_path, capsys):
    assert cli.main(["csim", str(tmp_path)]) == EXIT_USER_ERROR
    line = one_line_error(capsys)
    assert "is not an edgebnn run folder" in line
    assert f"-o {tmp_path}`" not in line and "-o RUN" in line and "new folder" in line


# ---------------------------------------------------------------------- a whole run, stage by stage
@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """A run with a validation set through every stage: train, freeze, export, csim, verify,
    estimate, report; with what train printed."""
    folder = tmp_path_factory.mktemp("fresh")
    cfg = quick_config(folder)
    config = yaml.safe_load(cfg.read_text())
    config["data"]["validation_fraction"] = 0.1
    cfg.write_text(yaml.safe_dump(config))
    run = folder / "run"
    code, trained = run_cli(["train", str(cfg), "-o", str(run)])
    assert code == EXIT_OK, trained
    for stage in ("freeze", "export", "csim", "verify", "estimate", "report"):
        code, out = run_cli([stage, str(run)])
        assert code == EXIT_OK, (stage, out)
    return folder, run, trained


def copy_of(done, tmp_path):
    _, run, _ = done
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, symlinks=True)
    return copy


def edit_config(run, section, key, value):
    config = yaml.safe_load((run / "config.yaml").read_text())
    config[section][key] = value
    (run / "config.yaml").write_text(yaml.safe_dump(config))


@pytest.mark.train
@pytest.mark.csim
def test_training_with_validation_says_which_epoch_the_model_holds(done):
    _, run, trained = done
    best = json.loads((run / "history.json").read_text())["best_epoch"]
    assert f"model.keras holds the best epoch {best} of 2" in trained, trained


@pytest.mark.train
@pytest.mark.csim
def test_csim_quiet_prints_its_result_and_a_cached_build_says_so(done, tmp_path):
    copy = copy_of(done, tmp_path)
    code, out = run_cli(["csim", str(copy), "-q"])
    assert code == EXIT_OK
    lines = out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("deployed accuracy (C-simulation) "), out
    code, out = run_cli(["csim", str(copy)])
    assert code == EXIT_OK
    assert "using the cached C-simulation build" in out and "compiling" not in out, out


@pytest.mark.train
@pytest.mark.csim
def test_verify_refuses_a_csim_npz_whose_project_is_out_of_date(done, tmp_path, capsys):
    copy = copy_of(done, tmp_path)
    edit_config(copy, "export", "reuse_factor", 4)
    before = snapshot(copy)
    capsys.readouterr()
    assert cli.main(["verify", str(copy)]) == EXIT_USER_ERROR
    line = one_line_error(capsys)
    assert "hls_project" in line and "out of date" in line and "'export' section changed" in line, line
    assert f"run `edgebnn export {copy}` again" in line
    assert "VERIFIED" not in capsys.readouterr().out
    assert snapshot(copy) == before


@pytest.mark.train
@pytest.mark.csim
def test_verify_refuses_a_csim_npz_made_before_the_project_was_exported_again(done, tmp_path, capsys):
    copy = copy_of(done, tmp_path)
    edit_config(copy, "export", "reuse_factor", 4)
    assert run_cli(["export", str(copy)])[0] == EXIT_OK
    capsys.readouterr()
    assert cli.main(["verify", str(copy)]) == EXIT_USER_ERROR
    line = one_line_error(capsys)
    assert "csim.npz" in line and "out of date" in line and f"run `edgebnn csim {copy}` again" in line, line


@pytest.mark.train
@pytest.mark.csim
def test_report_refuses_results_of_an_earlier_training(done, tmp_path, capsys):
    copy = copy_of(done, tmp_path)
    assert run_cli(["train", str(copy)])[0] == EXIT_OK  # trained again: graph, verify, estimate are the old model's
    before = snapshot(copy)
    capsys.readouterr()
    assert cli.main(["report", str(copy)]) == EXIT_USER_ERROR
    line = one_line_error(capsys)
    assert "graph.npz" in line and "out of date" in line and f"run `edgebnn freeze {copy}` again" in line, line
    assert snapshot(copy) == before


@pytest.mark.train
@pytest.mark.csim
def test_report_refuses_after_the_export_section_changed(done, tmp_path, capsys):
    copy = copy_of(done, tmp_path)
    edit_config(copy, "export", "reuse_factor", 4)
    capsys.readouterr()
    assert cli.main(["report", str(copy)]) == EXIT_USER_ERROR
    line = one_line_error(capsys)
    assert "out of date" in line and "'export' section changed" in line and f"`edgebnn export {copy}`" in line, line
    # in a process of its own too: loading the configuration imports TensorFlow, whose start-up logging stays quiet
    done_ = subprocess.run([sys.executable, "-m", "edgebnn", "report", str(copy)], capture_output=True, text=True, timeout=300)
    assert done_.returncode == EXIT_USER_ERROR and done_.stderr.splitlines() == [line], done_.stderr


@pytest.mark.train
@pytest.mark.csim
def test_resume_of_a_finished_training_does_nothing(done, tmp_path):
    copy = copy_of(done, tmp_path)
    before = snapshot(copy)
    code, out = run_cli(["train", str(copy), "--resume"])
    assert code == EXIT_OK
    assert "already trained all 2 epochs; nothing to do" in out, out
    assert "trained:" not in out and "next:" not in out  # nothing was trained
    assert snapshot(copy) == before
    assert run_cli(["report", str(copy)])[0] == EXIT_OK  # every later stage is still current


@pytest.mark.train
@pytest.mark.csim
def test_resume_says_at_which_epoch(done, tmp_path, monkeypatch):
    from edgebnn import stages

    copy = copy_of(done, tmp_path)
    state_path = copy / "checkpoints" / "state.json"
    state = json.loads(state_path.read_text())
    state["epoch"] = 1  # as if stopped after epoch 1 of 2
    state_path.write_text(json.dumps(state))

    class Stop(Exception):
        pass

    def no_training(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(stages, "_train", no_training)
    lines = []
    with pytest.raises(Stop):
        stages.train_stage(copy, resume=True, log=lines.append)
    name = yaml.safe_load((copy / "config.yaml").read_text())["name"]
    assert f"resuming {name} at epoch 2 of 2" in lines, lines


@pytest.mark.train
@pytest.mark.csim
def test_the_runs_own_estimate_needs_no_tensorflow(done, tmp_path):
    """edgebnn estimate RUN reads the graph and the configuration's sections, not its layers."""
    copy = copy_of(done, tmp_path)
    script = (
        "import json, sys\nfrom edgebnn import cli\n"
        f"code = cli.main(['estimate', {str(copy)!r}, '-q'])\n"
        "print(json.dumps([code, [m for m in ('keras', 'tensorflow') if m in sys.modules]]))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == [EXIT_OK, []]
    assert (copy / "estimate.json").is_file()


@pytest.mark.train
@pytest.mark.csim
def test_a_section_made_by_another_edgebnn_version_says_so(done, tmp_path, capsys):
    """A later edgebnn may add keys (with defaults) to a section, which changes its digest."""
    copy = copy_of(done, tmp_path)
    manifest = json.loads((copy / "run.json").read_text())
    manifest["stages"]["train"]["edgebnn"] = "0.0.1"
    (copy / "run.json").write_text(json.dumps(manifest))
    edit_config(copy, "train", "seed", 7)
    assert cli.main(["freeze", str(copy)]) == EXIT_USER_ERROR
    line = one_line_error(capsys)
    assert "the configuration's 'train' section (as edgebnn" in line and "edgebnn 0.0.1 made it)" in line, line


@pytest.mark.train
@pytest.mark.csim
def test_csim_says_it_compiles_before_the_build_once(done, tmp_path, monkeypatch):
    """Off a terminal (a log, CI) the compile line comes before g++'s seconds, not after them,
    and no line is printed twice."""
    from edgebnn import stages

    copy = copy_of(done, tmp_path)
    edit_config(copy, "export", "reuse_factor", 4)  # a new project: nothing cached has its content
    assert run_cli(["export", str(copy)])[0] == EXIT_OK
    monkeypatch.setenv("EDGEBNN_CSIM_CACHE", str(tmp_path / "empty-cache"))
    lines = []

    def log(msg):
        built = sorted(p.name for p in (copy / "hls_project" / "firmware").glob("*.so"))
        lines.append((msg, built))

    stages.csim_stage(copy, log=log)
    said = [msg for msg, _ in lines]
    assert len(said) == len(set(said)), said
    compiling = said.index("compiling the C-simulation (g++) ...")
    assert lines[compiling][1] == []  # said while g++ had not yet written the library
    assert said[compiling + 1].startswith("compiled the C-simulation in "), said
    assert "using the cached C-simulation build" not in said
