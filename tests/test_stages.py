"""The stages of the command line over one run folder: each from the previous one's saved output,
each replacing only its own outputs, and refusing an input that is out of date."""

import csv
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml
from run_folder import EXAMPLE, one_line_error, quick_config

from edgebnn import cli
from edgebnn.errors import EXIT_MISMATCH, EXIT_OK, EXIT_USER_ERROR


def digests(run, names):
    from edgebnn.runfolder import RunFolder

    folder = RunFolder(run)
    return {name: folder.digest(name) for name in names}


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """A run made stage by stage: train, freeze, export (no csim yet)."""
    folder = tmp_path_factory.mktemp("stages")
    cfg = quick_config(folder)
    run = folder / "run"
    assert cli.main(["train", str(cfg), "-o", str(run)]) == EXIT_OK
    assert cli.main(["freeze", str(run)]) == EXIT_OK
    assert cli.main(["export", str(run)]) == EXIT_OK
    return folder, run


@pytest.mark.train
def test_train_makes_a_run_folder_with_its_config_versions_and_history(staged):
    _, run = staged
    names = sorted(os.listdir(run))
    for name in (".edgebnn-output", "config.yaml", "run.json", "model.keras", "history.json", "graph.npz", "hls_project"):
        assert name in names
    manifest = json.loads((run / "run.json").read_text())
    assert {"train", "freeze", "export"} <= set(manifest["stages"])
    for tool in ("edgebnn", "keras", "tensorflow", "hls4ml", "numpy", "python"):
        assert manifest["versions"][tool]
    history = json.loads((run / "history.json").read_text())
    assert history["epoch"] == [1, 2] and len(history["loss"]) == 2
    assert yaml.safe_load((run / "config.yaml").read_text())["train"]["epochs"] == 2


@pytest.mark.train
def test_verify_before_csim_checks_the_emulator_leg_and_says_so(staged, capsys):
    _, run = staged
    if (run / "csim.npz").exists():
        pytest.fail("this test runs before the C-simulation (it is the module's first verify)")
    before = sorted(os.listdir(run))
    assert cli.main(["verify", str(run), "--require-csim"]) == EXIT_USER_ERROR  # a CI gate wants all three legs
    line = one_line_error(capsys)
    assert "has no csim.npz yet and --require-csim asks for the C-simulation leg" in line and f"`edgebnn csim {run}`" in line
    assert sorted(os.listdir(run)) == before  # refused before any work
    assert cli.main(["verify", str(run)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "emulator vs C-simulation not run" in out and "VERIFIED" not in out
    assert f"the C-simulation has not run: `edgebnn csim {run}`" in out
    result = json.loads((run / "verify.json").read_text())
    assert result["mismatches"] == {"keras_vs_emulator": 0, "emulator_vs_csim": None}
    assert result["accuracy"]["csim"] is None and result["deployed"] == "emulator"


@pytest.mark.train
@pytest.mark.csim
def test_csim_alone_then_verify_then_estimate_report_and_summary(staged, capsys):
    _, run = staged
    before = digests(run, ["model.keras", "graph.npz", "hls_project"])
    assert cli.main(["csim", str(run)]) == EXIT_OK
    assert digests(run, ["model.keras", "graph.npz", "hls_project"]) == before  # csim replaced only its own output
    with np.load(run / "csim.npz", allow_pickle=False) as saved:
        csim = saved["outputs"]
    assert csim.shape == (360, 10)
    capsys.readouterr()
    assert cli.main(["verify", str(run), "--require-csim"]) == EXIT_OK
    assert "VERIFIED bit for bit" in capsys.readouterr().out
    result = json.loads((run / "verify.json").read_text())
    assert result["mismatches"] == {"keras_vs_emulator": 0, "emulator_vs_csim": 0}
    matrix = np.array(result["confusion_matrix"])
    assert matrix.shape == (10, 10) and matrix.sum() == 360
    from edgebnn.data import load_dataset

    _, _, _, y_te = load_dataset("digits")
    assert result["accuracy"]["csim"] == float(np.mean(np.argmax(csim, axis=1) == y_te))
    assert np.trace(matrix) == round(result["accuracy"]["csim"] * 360)

    assert cli.main(["estimate", str(run)]) == EXIT_OK
    est = json.loads((run / "estimate.json").read_text())
    from edgebnn.boards import list_boards

    assert est["board"] == "pynq-z2" and set(est["estimates"]) == {b.name for b in list_boards() if b.hls4ml}
    ours = est["estimates"]["pynq-z2"]
    assert ours["strategy"] == "Resource" and ours["reuse_factor"] == 16  # the run's own export section
    rows = list(csv.DictReader(io.StringIO((run / "estimate.csv").read_text())))
    pynq = [r for r in rows if r["board"] == "pynq-z2"]
    assert [r["node"] for r in pynq[:-1]] == [r["name"] for r in ours["rows"]]
    assert pynq[-1]["node"] == "total" and int(pynq[-1]["lut"]) == ours["totals"]["lut"]
    assert (run / "estimate.txt").read_text().startswith(f"estimate of graph '{ours['graph']}' on pynq-z2")

    summary = json.loads((run / "summary.json").read_text())
    assert summary["mismatches"] == result["mismatches"] and summary["resources"]["fits"] == ours["fits"]

    assert cli.main(["report", str(run)]) == EXIT_OK
    report = json.loads((run / "report.json").read_text())
    assert report["verdict"]["verified"] is True and "emulator_vs_csim" in report["verdict"]["legs"]
    assert report["sections"]["accuracy"]["csim"] == result["accuracy"]["csim"]
    assert report["sections"]["accuracy"]["confusion_matrix"] == result["confusion_matrix"]
    assert report["sections"]["resources"]["run_board"]["totals"] == ours["totals"]
    assert (run / "report.html").read_text().count("<svg") >= 4

    capsys.readouterr()
    assert cli.main(["summary", str(run), "--json"]) == EXIT_OK
    table = json.loads(capsys.readouterr().out)
    assert table["params"]  # parameters per bit width of the trained model


@pytest.mark.train
@pytest.mark.csim
def test_an_out_of_date_input_is_refused_naming_the_stage_to_run(staged, capsys):
    folder, run = staged
    # a copy of the run whose export section changes: its project is then out of date
    import shutil

    copy = folder / "changed"
    shutil.copytree(run, copy, symlinks=True)
    config = yaml.safe_load((copy / "config.yaml").read_text())
    config["export"]["reuse_factor"] = 4
    (copy / "config.yaml").write_text(yaml.safe_dump(config))
    assert cli.main(["csim", str(copy)]) == EXIT_USER_ERROR
    line = one_line_error(capsys)
    assert "hls_project" in line and "out of date" in line and "'export' section changed" in line
    assert f"`edgebnn export {copy}`" in line
    assert not (copy / "csim.npz").exists() or digests(copy, ["csim.npz"]) == digests(run, ["csim.npz"])


def test_stage_refusals_are_one_line(tmp_path, capsys):
    assert cli.main(["freeze", str(tmp_path / "nothing")]) == EXIT_USER_ERROR
    assert "does not exist; make it with `edgebnn train CONFIG -o" in one_line_error(capsys)
    (tmp_path / "plain").mkdir()
    assert cli.main(["export", str(tmp_path / "plain")]) == EXIT_USER_ERROR
    assert "is not an edgebnn run folder" in one_line_error(capsys)
    cfg = quick_config(tmp_path)
    assert cli.main(["train", str(cfg)]) == EXIT_USER_ERROR
    assert "name the run folder to make: `edgebnn train" in one_line_error(capsys)
    assert cli.main(["train", str(cfg), "-o", str(tmp_path / "r"), "--resume"]) == EXIT_USER_ERROR
    assert "--resume continues a run folder" in one_line_error(capsys)
    assert sorted(os.listdir(tmp_path)) == ["plain", "quick.yaml"]


@pytest.mark.train
def test_a_stage_needs_the_one_before(tmp_path, capsys, monkeypatch):
    import importlib

    train_module = importlib.import_module("edgebnn.train")
    real = train_module.train
    cfg = quick_config(tmp_path, epochs=1)
    run = tmp_path / "run"
    monkeypatch.setattr(train_module, "train", real)
    assert cli.main(["train", str(cfg), "-o", str(run)]) == EXIT_OK
    capsys.readouterr()
    assert cli.main(["export", str(run)]) == EXIT_USER_ERROR
    assert f"has no graph.npz yet; run `edgebnn freeze {run}` first" in one_line_error(capsys)
    assert cli.main(["csim", str(run)]) == EXIT_USER_ERROR
    assert "has no graph.npz yet" in one_line_error(capsys)


def test_version_and_help_do_not_import_tensorflow():
    code = (
        "import sys, contextlib, io\n"
        "from edgebnn import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    for argv in (['--help'], ['--version'], ['train', '--help'], ['boards']):\n"
        "        assert cli.main(argv) == 0, argv\n"
        "print(sorted(m for m in ('tensorflow', 'keras', 'hls4ml') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "[]"


def test_version(capsys):
    from edgebnn import __version__

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"edgebnn {__version__}"


def test_every_stage_has_an_example_in_its_help(capsys):
    for stage in ("init", "train", "freeze", "export", "csim", "verify", "estimate", "report", "run", "boards", "summary"):
        assert cli.main([stage, "--help"]) == 0
        out = capsys.readouterr().out
        assert f"example:\n  edgebnn {stage}" in out, stage
        assert "--quiet" in out and "--verbose" in out


def test_estimate_writes_json_and_csv(tmp_path, capsys):
    from graphs import binary_mlp

    from edgebnn.estimate import estimate

    graph = binary_mlp()
    graph.save(tmp_path / "graph.npz")
    js, cs = tmp_path / "e.json", tmp_path / "e.csv"
    assert cli.main(["estimate", str(tmp_path / "graph.npz"), "--board", "all", "--json", str(js), "--csv", str(cs)]) == 0
    data = json.loads(js.read_text())
    from edgebnn.boards import list_boards

    assert [d["board"]["name"] for d in data] == [b.name for b in list_boards() if b.hls4ml]
    want = estimate(graph, "zcu104")
    (ours,) = [d for d in data if d["board"]["name"] == "zcu104"]
    assert ours["totals"] == want.totals and ours["latency_cycles"] == want.latency_cycles
    rows = [r for r in csv.DictReader(io.StringIO(cs.read_text())) if r["board"] == "zcu104"]
    assert [r["node"] for r in rows] == [r.name for r in want.rows] + ["total"]
    assert int(rows[-1]["ff"]) == want.totals["ff"]


@pytest.mark.train
def test_mismatch_in_verify_exits_1(tmp_path, monkeypatch, capsys):
    """A wrong graph (output levels reversed) is caught by verify, exit 1, evidence kept."""
    cfg = quick_config(tmp_path, epochs=1)
    run = tmp_path / "run"
    assert cli.main(["train", str(cfg), "-o", str(run)]) == EXIT_OK
    assert cli.main(["freeze", str(run)]) == EXIT_OK
    from edgebnn.graph import Graph

    graph = Graph.load(run / "graph.npz")
    graph.output.params["levels"][:] = graph.output.params["levels"][:, ::-1]
    graph.save(run / "graph.npz")
    capsys.readouterr()
    assert cli.main(["verify", str(run)]) == EXIT_MISMATCH
    assert "MISMATCH" in capsys.readouterr().out
    result = json.loads((run / "verify.json").read_text())
    assert result["mismatches"]["keras_vs_emulator"] > 0
    assert result["first_mismatches"][0]["layer"] == graph.output.name
    assert json.loads((run / "summary.json").read_text())["mismatches"] == result["mismatches"]


@pytest.mark.train
@pytest.mark.csim
@pytest.mark.parametrize(
    "damage, stage, says",
    [
        ("run.json", "freeze", "run.json' cannot be read"),
        ("model.keras", "freeze", "model.keras' cannot be loaded as a Keras model"),
        ("csim.npz", "verify", "csim.npz' cannot be read"),
        ("config.yaml", "export", "config.yaml: line 1: character #x0000 is not allowed in YAML"),
    ],
)
def test_a_damaged_run_folder_is_refused_in_one_line(staged, tmp_path, capsys, damage, stage, says):
    import shutil

    _, run = staged
    copy = tmp_path / "copy"
    shutil.copytree(run, copy, symlinks=True)
    if damage == "csim.npz" and not (copy / "csim.npz").exists():
        assert cli.main(["csim", str(copy)]) == EXIT_OK
        capsys.readouterr()
    (copy / damage).write_bytes(b"{ not what it should be: \x00\x01")
    before = sorted(os.listdir(copy))
    code = cli.main([stage, str(copy)])
    line = one_line_error(capsys)
    assert code == EXIT_USER_ERROR, line
    assert says in line and "internal error" not in line
    assert sorted(os.listdir(copy)) == before


def test_a_run_folder_of_an_earlier_edgebnn_says_how_to_make_it_again(tmp_path, capsys):
    from graphs import binary_mlp

    from edgebnn.outputs import MARKER

    old = tmp_path / "old"
    old.mkdir()
    (old / MARKER).write_text("edgebnn\n")
    (old / "summary.json").write_text(json.dumps({"board": "pynq-z2", "export": {"backend": "Vitis"}}))
    binary_mlp().save(old / "graph.npz")
    for stage in ("csim", "verify", "report"):
        assert cli.main([stage, str(old)]) == EXIT_USER_ERROR
        line = one_line_error(capsys)
        assert "made by an edgebnn before 0.2" in line and f"`edgebnn run CONFIG -o {old} --force`" in line
    assert cli.main(["estimate", str(old)]) == EXIT_OK  # the estimate still reads its summary's options
    assert sorted(os.listdir(old)) == [MARKER, "graph.npz", "summary.json"]


@pytest.mark.train
@pytest.mark.csim
@pytest.mark.slow
def test_a_run_on_the_users_own_npz_images_is_verified(tmp_path, capsys):
    """8-bit images in an .npz file beside the config (a relative path), scaled by 1/256 onto the
    input quantizer's grid, with a validation split: trained, frozen, exported, C-simulated and
    verified bit for bit by `edgebnn run`."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.round(digits.images * 255 / 16).astype(np.uint8)[..., None]  # (N, 8, 8, 1), 0..255
    labels = digits.target
    (tmp_path / "data").mkdir()
    np.savez(
        tmp_path / "data" / "mine.npz", x_train=images[:1400], y_train=labels[:1400], x_test=images[1400:], y_test=labels[1400:]
    )
    with open(EXAMPLE) as fh:
        config = yaml.safe_load(fh)
    config["data"] = {"dataset": "npz", "path": "data/mine.npz", "scale": 1 / 256, "validation_fraction": 0.1, "seed": 1}
    config["model"].insert(0, {"Flatten": {}})
    for layer in config["model"]:
        if layer.get("QuantDense", {}).get("units") == 128:
            layer["QuantDense"]["units"] = 16
    config["train"]["epochs"] = 3
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(config))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd = os.getcwd()
    os.chdir(elsewhere)  # the data path is read from the config file's folder, not the current one
    try:
        code = cli.main(["run", str(tmp_path / "mine.yaml"), "-o", str(tmp_path / "run")])
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert code in (EXIT_OK, 3), out  # verified (3: verified but too big for the board)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["samples"] == len(labels) - 1400
    assert summary["mismatches"] == {"keras_vs_emulator": 0, "emulator_vs_csim": 0}
    history = json.loads((tmp_path / "run" / "history.json").read_text())
    assert len(history["val_accuracy"]) == 3  # the validation split was used
    assert "mine.npz" in out


def test_init_writes_a_commented_starter_that_loads_with_every_default(tmp_path, capsys):
    from edgebnn.config import DEFAULTS, load_config

    cfg = tmp_path / "mine.yaml"
    assert cli.main(["init", str(cfg)]) == EXIT_OK
    text = cfg.read_text()
    assert "# a board name" in text and "lr_schedule: exponential" in text and "validation_fraction: 0.0" in text
    config = load_config(cfg)
    assert all(config[k] == v for k, v in DEFAULTS.items() if k != "name")
    assert config["model"][0]["QuantDense"]["kernel_quantizer"] == "ste_sign"
    assert cli.main(["init", str(cfg)]) == EXIT_USER_ERROR  # no overwrite without --force
    assert "already exists" in one_line_error(capsys)
    assert cli.main(["init", str(tmp_path / "zoo.yaml"), "--example", "binary_cnn"]) == EXIT_OK
    assert (
        load_config(tmp_path / "zoo.yaml")["model"]
        == load_config(os.path.join(os.path.dirname(EXAMPLE), "zoo", "binary_cnn.yaml"))["model"]
    )
    assert cli.main(["init", str(tmp_path / "x.yaml"), "--example", "nosuch"]) == EXIT_USER_ERROR
    assert "is not an example configuration; the examples are: " in one_line_error(capsys)
    assert sorted(os.listdir(tmp_path)) == ["mine.yaml", "zoo.yaml"]


@pytest.mark.parametrize(
    "data, train, says",
    [
        ({"dataset": "npz"}, {}, "key 'data.path' is missing; dataset npz reads a file"),
        ({"dataset": "digits", "path": "x.npz"}, {}, "key 'data.path' is for dataset npz or csv"),
        ({"dataset": "npz", "path": "x.npz", "test_path": "t.csv"}, {}, "key 'data.test_path' is for csv files"),
        ({"validation_fraction": 1.0}, {}, "key 'data.validation_fraction' must be a fraction from 0"),
        ({}, {"early_stopping": {"patience": 3}}, "set data.validation_fraction (e.g. 0.1)"),
        ({"validation_fraction": 0.1}, {"early_stopping": {"monitor": "acc"}}, "use one of val_accuracy, val_loss"),
        ({"validation_fraction": 0.1}, {"early_stopping": {"patients": 3}}, "unknown key 'train.early_stopping.patients'"),
        ({}, {"lr_schedule": "linear"}, "key 'train.lr_schedule' is 'linear'; use one of exponential, cosine, step, constant"),
        ({}, {"distribute": "tpu"}, "key 'train.distribute' is 'tpu'; use one of null, mirrored, multi_worker"),
        ({}, {"warmup_epochs": -1}, "key 'train.warmup_epochs' must be an integer >= 0"),
        ({}, {"restore_best": "yes"}, "key 'train.restore_best' must be true or false"),
    ],
)
def test_new_config_keys_are_checked_at_load(tmp_path, data, train, says):
    from edgebnn.config import ConfigError, load_config

    text = yaml.safe_dump({"model": [{"QuantDense": {"units": 4, "kernel_quantizer": "ste_sign"}}], "data": data, "train": train})
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "c.yaml")
    assert says in str(err.value) and len(str(err.value).splitlines()) == 1


def test_relative_data_paths_are_read_from_the_config_files_folder(tmp_path):
    from edgebnn.config import load_config

    (tmp_path / "c.yaml").write_text(
        yaml.safe_dump(
            {"model": [{"QuantDense": {"units": 4}}], "data": {"dataset": "csv", "path": "d/a.csv", "test_path": "/abs/t.csv"}}
        )
    )
    config = load_config(tmp_path / "c.yaml")
    assert config["data"]["path"] == str(tmp_path / "d" / "a.csv") and config["data"]["test_path"] == "/abs/t.csv"
    assert load_config(tmp_path / "c.yaml", base_dir="/elsewhere")["data"]["path"] == "/elsewhere/d/a.csv"
