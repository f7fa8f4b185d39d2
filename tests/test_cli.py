"""The command line end to end: the demo run, and how it fails."""

import json
import os

import pytest

from edgebnn import cli

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "digits_bnn.yaml")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "digits"
    code = cli.main(["run", EXAMPLE, "-o", str(out)])
    return code, out


@pytest.mark.train
@pytest.mark.csim
@pytest.mark.slow
def test_demo_run_is_verified_and_accurate(demo_run):
    code, out = demo_run
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 360
    assert summary["mismatches"] == {"keras_vs_emulator": 0, "emulator_vs_csim": 0}
    assert summary["accuracy_deployed"] >= 0.92
    assert summary["accuracy_deployed"] == summary["accuracy_keras"] == summary["accuracy_emulator"]
    assert summary["board"] == "pynq-z2"
    assert summary["resources"]["totals"]["dsp"] == 0  # binary layers need no multiplier
    assert summary["resources"]["fits"] is True  # the example's reuse factor fits its board
    project = out / "hls_project"
    assert summary["project_dir"] == str(project)
    assert (project / "build_prj.tcl").is_file() and (project / "firmware").is_dir()
    texts = [p.read_text(errors="ignore") for p in project.iterdir() if p.is_file() and p.suffix in (".tcl", ".yml")]
    assert any("xc7z020clg400-1" in t for t in texts)
    assert not [p for p in out.parent.iterdir() if ".partial-" in p.name]


@pytest.mark.train
@pytest.mark.csim
@pytest.mark.slow
def test_existing_output_is_refused_without_force(demo_run, capsys):
    _, out = demo_run
    before = sorted(os.listdir(out))
    assert cli.main(["run", EXAMPLE, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(out) in err and "--force" in err
    assert sorted(os.listdir(out)) == before


def test_bad_config_is_one_line(tmp_path, capsys):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("model: []\ntrain: {epochz: 3}\n")
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "train.epochz" in err
    assert not (tmp_path / "out").exists()


def test_interrupted_run_leaves_nothing(tmp_path, monkeypatch, capsys):
    import importlib

    train_module = importlib.import_module("edgebnn.train")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "train", interrupted)
    assert cli.main(["run", EXAMPLE, "-o", str(tmp_path / "out")]) == 130
    assert os.listdir(tmp_path) == []


def quick_config(tmp_path, last_layer=None, before_last=False):
    """The example with one training epoch and 16 units in its hidden layers, for a short
    C-simulation build (and optionally another last layer, or a layer before the last)."""
    import yaml

    with open(EXAMPLE) as fh:
        config = yaml.safe_load(fh)
    config["train"]["epochs"] = 1
    for layer in config["model"]:
        if layer.get("QuantDense", {}).get("units") == 128:
            layer["QuantDense"]["units"] = 16
    if last_layer is not None and before_last:
        config["model"].insert(len(config["model"]) - 1, last_layer)
    elif last_layer is not None:
        config["model"][-1] = last_layer
    path = tmp_path / "quick.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_unfreezable_layer_is_named_and_nothing_written(tmp_path, capsys):
    cfg = quick_config(tmp_path, {"Activation": {"activation": "softmax", "name": "probs"}}, before_last=True)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'probs' (Activation)" in err and "from_logits" in err
    assert sorted(os.listdir(tmp_path)) == ["quick.yaml"]


@pytest.mark.train
@pytest.mark.csim
@pytest.mark.slow
def test_mismatch_exits_nonzero_and_keeps_the_evidence(tmp_path, monkeypatch):
    import importlib

    freeze_module = importlib.import_module("edgebnn.freeze")  # edgebnn.freeze is the function
    real_freeze = freeze_module.freeze

    def broken_freeze(model, **kwargs):
        graph = real_freeze(model, **kwargs)
        levels = graph.output.params["levels"]
        levels[:] = levels[:, ::-1]  # a wrong deployment: every output level reversed
        return graph

    monkeypatch.setattr(freeze_module, "freeze", broken_freeze)
    out = tmp_path / "out"
    assert cli.main(["run", str(quick_config(tmp_path)), "-o", str(out)]) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mismatches"]["keras_vs_emulator"] > 0
    assert summary["mismatches"]["emulator_vs_csim"] == 0  # the project follows the (wrong) graph
    from edgebnn.graph import Graph

    assert summary["first_mismatches"][0]["layer"] == Graph.load(out / "graph.npz").output.name


def test_estimate_of_a_run_folder_uses_the_runs_own_board_and_export_options(tmp_path, capsys):
    import json

    from graphs import binary_mlp

    from edgebnn.cli import main

    run = tmp_path / "run"
    run.mkdir()
    binary_mlp().save(run / "graph.npz")
    (run / "summary.json").write_text(
        json.dumps(
            {
                "board": "zcu104",
                "export": {
                    "backend": "Vitis",
                    "io_type": "io_stream",
                    "strategy": "Resource",
                    "reuse_factor": 4,
                    "clock_period_ns": None,
                    "hls_tool": None,
                },
            }
        )
    )
    assert main(["estimate", str(run)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "on zcu104" in head and "Resource, reuse factor 4, io_stream" in head
    assert main(["estimate", str(run), "--strategy", "Latency", "--board", "pynq-z2"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "on pynq-z2" in head and "Latency, reuse factor 4, io_stream" in head


def test_estimate_takes_a_reuse_factor_per_node(tmp_path, capsys):
    from graphs import binary_mlp

    from edgebnn.cli import main
    from edgebnn.estimate import estimate

    path = tmp_path / "graph.npz"
    graph = binary_mlp()
    graph.save(path)
    first, *rest = [n.name for n in graph.nodes if "weight" in n.params]
    assert main(["estimate", str(path), "--strategy", "Resource", "--reuse-factor", f"{first}=4"]) == 0
    out = capsys.readouterr().out
    want = estimate(graph, "pynq-z2", strategy="Resource", reuse_factor={first: 4})
    assert want.table() in out
    assert want.rows[[r.name for r in want.rows].index(first)].detail["reuse_factor"] == 4
    assert main(["estimate", str(path), "--reuse-factor", "d9=x"]) == 2
    assert "'d9=x' in 'd9=x' is not NODE=RF with an integer RF" in capsys.readouterr().err
    assert main(["estimate", str(path), "--reuse-factor", "nosuch=2"]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and err.count("\n") == 1


def test_estimate_takes_other_types_inline_or_from_a_file(tmp_path, capsys):
    """A what-if on the design's types (estimate's types=), e.g. hls4ml's default fixed<16,6> accumulators."""
    from graphs import binary_mlp

    from edgebnn.cli import main
    from edgebnn.estimate import estimate

    path = tmp_path / "graph.npz"
    graph = binary_mlp()
    graph.save(path)
    types = {"*": {"accum": "fixed<16,6>", "result": "fixed<16,6>"}}
    want = estimate(graph, "pynq-z2", types=types)
    assert want.table() != estimate(graph, "pynq-z2").table()  # the types change the estimate
    (tmp_path / "types.yaml").write_text('"*": {accum: "fixed<16,6>", result: "fixed<16,6>"}\n')
    for given in ('{"*": {"accum": "fixed<16,6>", "result": "fixed<16,6>"}}', str(tmp_path / "types.yaml")):
        assert main(["estimate", str(path), "--types", given]) == 0
        assert want.table() in capsys.readouterr().out
    for bad, says in (
        ("[1, 2]", "argument --types: '[1, 2]' is neither a file nor a mapping of node names"),
        ('{"nosuch": {"accum": "fixed<16,6>"}}', "types names node 'nosuch', which graph"),
        ('{"*": {"accum": "fixed<1x>"}}', "types['*']['accum'] = 'fixed<1x>' is not a fixed-point type"),
    ):
        assert main(["estimate", str(path), "--types", bad]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1
    assert sorted(os.listdir(tmp_path)) == ["graph.npz", "types.yaml"]


def test_a_closed_output_pipe_ends_quietly_with_exit_141(tmp_path):
    # `edgebnn estimate RUN --board all | head -3`: the reader closed the pipe; no error line, and
    # 128 + SIGPIPE as a Unix tool ends there (not 0: the command did not reach its end)
    import subprocess
    import sys

    from graphs import binary_mlp

    binary_mlp().save(tmp_path / "graph.npz")
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgebnn", "estimate", str(tmp_path / "graph.npz"), "--board", "all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # closed before the command prints (it starts in far more than the time this takes), as `head -0`
    # does: closed after one line, the rest could fit the pipe's buffer before the close and end with 0
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_a_closed_output_pipe_in_process_is_not_a_user_error(monkeypatch, capsys):
    import sys

    class Closed:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", Closed())
    assert cli.main(["boards"]) == 141
    assert capsys.readouterr().err == ""


def test_verbose_logs_every_training_epoch_off_a_terminal():
    from edgebnn import progress
    from edgebnn.train import _Progress

    def epochs_logged(level):
        lines = []
        report = _Progress(30, lines.append)
        old = progress.level()
        progress.set_level(level)
        try:
            for epoch in range(30):
                report(epoch, {"loss": 0.5, "accuracy": 0.9, "val_accuracy": 0.8})
        finally:
            progress.set_level(old)
        return [int(line.split()[1].split("/")[0]) for line in lines], lines

    shown, _ = epochs_logged(progress.NORMAL)
    assert shown == [1, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30]  # the first, every epochs // 10-th, the last
    shown, lines = epochs_logged(progress.VERBOSE)
    assert shown == list(range(1, 31))
    assert all("loss" in line and "train accuracy" in line and "validation accuracy" in line for line in lines)


def test_verbose_estimate_prints_a_line_per_board(tmp_path, capsys):
    from graphs import binary_mlp

    from edgebnn.boards import list_boards

    binary_mlp().save(tmp_path / "graph.npz")
    assert cli.main(["estimate", str(tmp_path / "graph.npz"), "--board", "all"]) == 0
    normal = capsys.readouterr().out
    assert cli.main(["estimate", str(tmp_path / "graph.npz"), "--board", "all", "-v"]) == 0
    verbose = capsys.readouterr().out
    extra = [line for line in verbose.splitlines() if line.startswith("estimated ")]
    assert [line.split()[1].rstrip(":") for line in extra] == [b.name for b in list_boards() if b.hls4ml]
    assert "estimated " not in normal and verbose != normal


def test_help_lists_the_commands_in_pipeline_order(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.split("COMMAND\n", 1)[1].split("\n\n")[0].splitlines() if line[4:5].strip()]
    assert listed == [
        "init", "train", "freeze", "export", "csim", "verify", "synth", "estimate", "report", "run", "summary", "boards",
    ]  # fmt: skip


def _modules_after(code: str) -> dict:
    """Run ``code`` (which sets ``result``) in a fresh interpreter; the result and whether Keras
    or TensorFlow was imported."""
    import subprocess
    import sys

    script = code + "\nimport json, sys\nprint(json.dumps([result, [m for m in ('keras', 'tensorflow') if m in sys.modules]]))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True).stdout
    result, imported = json.loads(out.splitlines()[-1])
    return {"result": result, "imported": imported}


@pytest.mark.parametrize("command", ["train", "run", "summary"])
def test_a_config_error_is_reported_before_tensorflow_is_imported(tmp_path, command):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: []\ntrain: {epochz: 3}\n")
    args = [command, str(bad)] + (["-o", str(tmp_path / "out")] if command != "summary" else [])
    got = _modules_after(f"from edgebnn import cli\nresult = cli.main({args!r})")
    assert got == {"result": 2, "imported": []}


def test_estimate_of_a_run_folder_on_another_board_needs_no_tensorflow(tmp_path):
    import shutil

    from graphs import binary_mlp

    from edgebnn.outputs import MARKER

    run = tmp_path / "run"
    run.mkdir()
    (run / MARKER).write_text("")
    shutil.copy(EXAMPLE, run / "config.yaml")
    binary_mlp().save(run / "graph.npz")
    got = _modules_after(f"from edgebnn import cli\nresult = cli.main(['estimate', {str(run)!r}, '--board', 'zcu104'])")
    assert got == {"result": 0, "imported": []}


def test_estimate_refuses_a_reuse_factor_hls4ml_would_build_as_another(tmp_path, capsys):
    """Figures labelled 'reuse factor 3' must be for 3: under Resource, hls4ml snaps 3 to a valid one."""
    from graphs import binary_mlp

    binary_mlp().save(tmp_path / "graph.npz")  # 16 -> 12 -> 8 -> 4: 3 is valid for no layer
    graph = str(tmp_path / "graph.npz")
    assert cli.main(["estimate", graph, "--strategy", "Resource", "--reuse-factor", "3"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "reuse factor 3 of node" in err and "use one of 1, 2, 4" in err, err
    assert cli.main(["estimate", graph, "--strategy", "Resource", "--reuse-factor", "4"]) == 0
    assert "Resource, reuse factor 4," in capsys.readouterr().out
    assert cli.main(["estimate", graph, "--strategy", "Latency", "--reuse-factor", "3"]) == 0  # Latency builds any


@pytest.mark.parametrize(
    "command, own",
    [("run", {1, 3}), ("verify", {1}), ("freeze", set()), ("estimate", set()), ("boards", set()), ("train", set())],
)
def test_each_commands_help_lists_the_exit_codes_it_can_return(command, own, capsys):
    from edgebnn.errors import EXIT_CODES

    with pytest.raises(SystemExit):
        cli.build_parser().parse_args([command, "--help"])
    text = capsys.readouterr().out
    listed = {int(line.split()[0]) for line in text.split("exit codes:\n", 1)[1].splitlines() if line.strip()}
    assert listed == {0, 2, 4, 130, 141, 143} | own
    assert ("training keeps its last checkpoint" in text) == (command in ("run", "train"))
    assert ("for run:" in text) == (command == "run")
    verbose = text.split("--verbose", 1)[1].split("\n  -", 1)[0]
    assert ("epoch" in verbose) == (command in ("run", "train")) and ("board" in verbose) == (command == "estimate")
    assert len(EXIT_CODES) == 8


def test_names_a_user_types_get_a_did_you_mean(tmp_path):
    """Boards, layers, layer arguments and quantizers, as config keys do; Keras internals unlisted."""
    from edgebnn.boards import load_board
    from edgebnn.config import ConfigError, load_config
    from edgebnn.errors import EdgebnnError

    with pytest.raises(EdgebnnError, match=r"unknown board 'pynq-z3' \(did you mean 'pynq-z2'\?\)"):
        load_board("pynq-z3")
    cases = {
        "QuantDens: {units: 4}": r"unknown layer 'QuantDens' \(did you mean 'QuantDense'\?\)",
        "QuantDense: {unit: 4}": r"unknown key 'unit' \(did you mean 'units'\?\); known keys: ",
        "QuantActivation: {quantizer: ste_sgn}": r"unknown quantizer 'ste_sgn' \(did you mean 'ste_sign'\?\)",
        "QuantActivation: {quantizer: 'quantized_bit(4, 0)'}": r"\(did you mean 'quantized_bits'\?\)",
    }
    for layer, expected in cases.items():
        path = tmp_path / "c.yaml"
        path.write_text(f"data: {{dataset: digits}}\nmodel:\n  - {layer}\n")
        with pytest.raises(ConfigError, match=expected) as info:
            load_config(path)
        for internal in ("lora_alpha", "lora_rank", "dtype", "autocast", "quantization_config"):
            assert internal not in str(info.value)
