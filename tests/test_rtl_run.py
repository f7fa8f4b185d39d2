"""A run with ``export: {backend: rtl}``: the configuration's folding, the stages end to end (train,
freeze, export -> rtl/, csim -> the Verilator simulation, verify with the emulator = RTL leg,
synth -> Yosys and nextpnr-ice40 on the iCEBreaker's UP5K, as the example does, estimate, report)
through ``edgebnn run``, and the refusals of what only the other backend takes. (The ECP5 flow,
whose nextpnr comes from pip and runs as WebAssembly, is placed in tests/test_rtl_synth.py.)"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import yaml
from run_folder import CONFIG

from edgebnn.config import ConfigError, check_config

RTL_CONFIG = copy.deepcopy(CONFIG)
RTL_CONFIG.update(
    name="rtl_digits",
    board="icebreaker",
    export={"backend": "rtl", "folding": {"quant_dense": [2, 8], "quant_dense_1": [2, 8]}},
)
RTL_CONFIG["train"]["epochs"] = 2


def _refusal(config) -> str:
    with pytest.raises(ConfigError) as err:
        check_config(copy.deepcopy(config), "c.yaml")
    return str(err.value)


def test_the_rtl_backend_and_its_folding_load():
    config = check_config(copy.deepcopy(RTL_CONFIG), "c.yaml")
    assert config["export"]["backend"] == "rtl"
    assert config["export"]["folding"] == {"quant_dense": [2, 8], "quant_dense_1": [2, 8]}
    assert check_config({**copy.deepcopy(RTL_CONFIG), "export": {"backend": "RTL"}})["export"]["folding"] == "auto"


def test_folding_names_weighted_layers_and_takes_pairs():
    bad = copy.deepcopy(RTL_CONFIG)
    bad["export"]["folding"] = {"dense_9": [1, 1]}
    assert _refusal(bad) == (
        "c.yaml: key 'export.folding' names 'dense_9', which is not a weighted layer of the model; "
        "its weighted layers are quant_dense, quant_dense_1"
    )
    bad["export"]["folding"] = {"quant_dense": [8]}
    assert "key 'export.folding'" in _refusal(bad)
    bad["export"]["folding"] = {"quant_dense": [0, 1]}
    assert "key 'export.folding'" in _refusal(bad)


def test_folding_is_refused_for_an_hls4ml_backend():
    bad = copy.deepcopy(CONFIG)
    bad["export"] = {"backend": "Vitis", "folding": {"quant_dense": [1, 1]}}
    assert _refusal(bad) == (
        "c.yaml: key 'export.folding' is the rtl backend's (PE x SIMD per layer); backend Vitis takes "
        "reuse_factor instead (or set backend: rtl)"
    )


def test_an_hls4ml_run_on_an_open_flow_board_is_refused_before_training(tmp_path):
    config = copy.deepcopy(CONFIG)
    config["board"] = "icebreaker"
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [sys.executable, "-m", "edgebnn", "train", str(path), "-o", str(tmp_path / "run")], capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "key 'board'" in done.stderr and "hls4ml cannot build for" in done.stderr
    assert not (tmp_path / "run").exists()


def test_an_rtl_run_fits_by_its_synthesized_design_not_by_the_hls4ml_estimate():
    from edgebnn.pipeline import rtl_headline, run_fits

    # the example on the iCEBreaker: hls4ml's estimate of the same graph (unrolled, on the
    # PYNQ-Z2) does not fit, the placed RTL design does, and the run's exit code follows the latter
    summary = {
        "board": "icebreaker",
        "export": {"backend": "rtl"},
        "mismatches": {"keras_vs_emulator": 0, "emulator_vs_csim": None, "emulator_vs_rtl": 0},
        "resources": {"fits": False},
        "rtl": {"utilization": {"lut": 0.635, "ff": 0.377, "dsp": 0.0, "bram": 0.2}},
    }
    assert run_fits(summary) and rtl_headline(summary) == "VERIFIED bit for bit, and fits icebreaker"
    summary["rtl"]["utilization"]["lut"] = 1.13
    assert not run_fits(summary)
    assert rtl_headline(summary) == "VERIFIED bit for bit, but DOES NOT FIT icebreaker (LUT 113%)"
    assert not run_fits({**summary, "export": {"backend": "Vitis"}, "resources": {"fits": False}})
    assert run_fits({**summary, "export": {"backend": "Vitis"}, "resources": {"fits": True}})


@pytest.mark.rtl
@pytest.mark.train
@pytest.mark.slow
def test_edgebnn_run_builds_simulates_and_places_the_design(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(RTL_CONFIG))
    run = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "edgebnn", "run", str(path), "-o", str(run)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["mismatches"] == {"keras_vs_emulator": 0, "emulator_vs_csim": None, "emulator_vs_rtl": 0}
    assert summary["accuracy_deployed"] == summary["accuracy_emulator"]
    rtl = summary["rtl"]
    assert rtl["flow"] == "ice40" and rtl["part"] == "iCE40UP5K-SG48I"
    assert rtl["lut"] > 0 and rtl["ff"] > 0 and rtl["fmax_mhz"] > 0
    # quant_dense 64 -> 24 at 2 x 8 takes 12 x 8 = 96 cycles (a small design: placed in seconds),
    # quant_dense_1 24 -> 10 at 2 x 8 takes 5 x 3 = 15; the slowest sets the rate
    assert rtl["cycles_per_sample"] == 96
    assert rtl["samples_per_s"] == pytest.approx(rtl["fmax_mhz"] * 1e6 / 96)
    for name in ("rtl/project.json", "rtl/synth/ice40/record.json", "rtl/synth/ice40/run.sh", "rtlsim.npz", "synth.json"):
        assert (run / name).exists(), name
    assert "VERIFIED bit for bit" in done.stdout and "Fmax" in done.stdout
    estimate = json.loads((run / "estimate.json").read_text())
    assert estimate["backend"] == "rtl" and estimate["rtl"]["total"]["lut"] > 0
    from edgebnn.backends.rtl.cost import Cost
    from edgebnn.backends.rtl.fit import unit_on_board
    from edgebnn.graph import Graph

    graph = Graph.load(run / "graph.npz")  # the design's units counted in logic cells as the fit counts them
    folding = {name: tuple(f) for name, f in estimate["rtl"]["folding"].items()}
    units = [unit_on_board(graph, node, folding.get(node.name), "ice40") for node in graph.compute_nodes()]
    assert estimate["rtl"]["total"] == sum(units, Cost()).to_dict()
    assert estimate["hls4ml_board"] == "pynq-z2" and "pynq-z2" in estimate["estimates"]

    # the stages read the run's own outputs: synth again is refused for an hls4ml run only
    again = subprocess.run([sys.executable, "-m", "edgebnn", "verify", str(run)], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert json.loads((run / "verify.json").read_text())["mismatches"]["emulator_vs_rtl"] == 0
