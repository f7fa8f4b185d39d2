"""``edgebnn run``: train, freeze, emulate, export, C-simulate, verify and estimate, in order.

Everything is written into a staging folder that becomes the output folder only when the run
completes, so an interrupted run leaves nothing half-written.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .config import ConfigError, build_model, load_config, target_of
from .errors import EdgebnnError


def _check_input_type(input_type: str | None, data, config_path) -> None:
    """The data lie on the grid of the configured input type (Keras reads them as they are)."""
    if input_type is None:
        return
    from .fixed import FixedType, propose_input_type

    if not all(FixedType.from_string(input_type).contains(x) for x in data):
        proposed = propose_input_type(np.concatenate([x.ravel() for x in data]))
        raise ConfigError(
            f"{os.fspath(config_path)}: key 'freeze.input_type': the data set's values are not all on the grid of "
            f"{input_type}; give a type that holds them, e.g. {str(proposed)!r}"
        )


def _check_export_untrained(model, input_type, target, config_path) -> None:
    """Refuse, before training, a model whose structure the export cannot build in the configured
    io type (e.g. a BatchNormalization head after a Flatten in io_stream): the untrained model is
    frozen (its weights as initialized) and the graph checked for the refusals its weights cannot
    change (``check_graph(structure_only=True)``). A freeze that fails on the untrained weights
    says nothing about the trained ones, so it refuses nothing."""
    from .backends.hls4ml.exporter import check_graph
    from .freeze import freeze

    if target.io_type != "io_stream":  # every structural refusal is one of io_stream's: nothing to find
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = freeze(model, input_type=input_type)
    except EdgebnnError:
        return
    try:
        check_graph(graph, target.io_type, structure_only=True)
    except EdgebnnError as err:
        raise ConfigError(
            f"{os.fspath(config_path)}: the model cannot be exported in {target.io_type} (checked before training): {err}"
        ) from None


def run(
    config_path: str | os.PathLike, output_dir: str | os.PathLike, force: bool = False, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Run the whole pipeline for one configuration; returns the summary (also in summary.json).

    Everything that can be checked without training is checked first, before the output
    folder is touched: the configuration's keys and ranges, the board, the export options, g++,
    the output path, that the model's structure can be frozen and exported, and that hls4ml
    builds each layer's reuse factor as given.
    """
    from .backends.hls4ml import HLSExportWarning, check_compiler, check_output_path, export, reuse
    from .boards import load_board
    from .data import DataError, load_dataset
    from .estimate import estimate
    from .freeze import FreezeWarning, freeze, plan
    from .outputs import check_output, staged_dir
    from .train import seed_everything, train
    from .verify import verify

    stages: dict[str, float] = {}  # seconds per stage, in summary.json
    clock = [time.perf_counter()]

    def done(name: str) -> None:
        now = time.perf_counter()
        stages[name] = round(now - clock[0], 2)
        clock[0] = now

    config = load_config(config_path)
    board = load_board(config["board"])
    exp = config["export"]  # checked when the configuration was loaded
    target = target_of(config, board)
    check_compiler()
    final = check_output(output_dir, force=force, what="run folder", marked_only=True)
    check_output_path(final / "hls_project")  # characters hls4ml's C-simulation build cannot take
    try:
        x_tr, y_tr, x_te, y_te = load_dataset(**config["data"])
    except DataError as err:
        raise ConfigError(f"{os.fspath(config_path)}: key 'data': {err}") from None
    input_type = config["freeze"]["input_type"]
    _check_input_type(input_type, (x_tr, x_te), config_path)
    seed_everything(config["train"]["seed"])
    model = build_model(config, x_tr.shape[1:])
    plan(model, input_type=input_type)  # the structure freezes and exports: refuse it now, not after training
    _check_export_untrained(model, input_type, target, config_path)
    try:  # and hls4ml builds every reuse factor as given
        reuse.check(target, reuse.matrices_of_model(model), model.name)
    except EdgebnnError as err:
        raise ConfigError(f"{os.fspath(config_path)}: key 'export.reuse_factor': {err}") from None
    done("checks")
    with staged_dir(final, force=force, what="run folder", marked_only=True) as work:
        t0 = time.time()
        log(f"data: {config['data']['dataset']}, {len(x_tr)} training and {len(x_te)} test samples")
        log(f"training {model.name} for {config['train']['epochs']} epochs")
        train(model, x_tr, y_tr, log=log, **config["train"])
        model.save(work / "model.keras")
        done("train")

        log("freezing")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FreezeWarning)
            graph = freeze(model, name=config["name"], input_type=input_type)
        for w in caught:
            log(f"  warning: {w.message}")
        graph.save(work / "graph.npz")
        done("freeze")

        log(f"exporting the HLS project for {board.name} ({board.part})")
        with warnings.catch_warnings():  # shown once, below, as log lines
            warnings.simplefilter("ignore", HLSExportWarning)
            project = export(graph, work / "hls_project", target=target)
        for warning in project.warnings:
            log(f"  warning: {warning}")
        done("export")
        log("compiling the C-simulation (g++)")
        project.compile()
        done("compile")

        log(f"verifying Keras = emulator = C-simulation on {len(x_te)} test samples")
        keras_out = model.predict(x_te, verbose=0)
        report = verify(model, graph, x_te, project=project, keras_output=keras_out)
        done("verify")

        log(f"estimating resources on {board.name}")
        est = estimate(graph, target=target)
        done("estimate")

        acc = {k: float(np.mean(np.argmax(v.reshape(len(v), -1), axis=1) == y_te)) for k, v in report.outputs.items()}
        summary = {
            "name": config["name"],
            "samples": report.samples,
            "accuracy_keras": acc["keras"],
            "accuracy_deployed": acc["csim"],
            "accuracy_emulator": acc["emulator"],
            "mismatches": {
                "keras_vs_emulator": report.keras_vs_emulator,
                "emulator_vs_csim": report.emulator_vs_csim,
            },
            "first_mismatches": report.to_dict()["first_mismatches"],
            "stream_leftovers": list(report.stream_leftovers),
            "keras_caveats": list(report.caveats),
            "board": board.name,
            "part": board.part,
            "project_dir": str(final / "hls_project"),
            "graph": str(final / "graph.npz"),
            "model": str(final / "model.keras"),
            "resources": est.to_dict(),
            "export": exp,
            "target": target.to_dict(),
            "seconds": round(time.time() - t0, 1),
            "stage_seconds": stages,
        }
        (work / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        (work / "estimate.txt").write_text(est.table() + "\n")
    log("")
    log(format_summary(summary, est))
    return summary


def headline(summary: dict[str, Any], est) -> str:
    """The verdict: bit-exact or not, and whether the design fits the board."""
    verified = not any(summary["mismatches"].values()) and not summary.get("stream_leftovers")
    if est.fits:
        fit = f"fits {summary['board']}"
    else:
        key = max(est.utilization, key=lambda k: est.utilization[k])
        fit = (
            f"DOES NOT FIT {summary['board']} ({key.upper()} {est.utilization[key]:.0f}% of the device, "
            f"limit {100 * est.utilization_limit:.0f}%)"
        )
    if verified:
        return f"VERIFIED bit for bit, {'and ' + fit if est.fits else 'but ' + fit}"
    if not any(summary["mismatches"].values()):
        return f"MISMATCH (the C-simulation left data in a stream, so the hardware would stall); it {fit}"
    return f"MISMATCH (not bit-exact); it {fit}"


def format_summary(summary: dict[str, Any], est) -> str:
    mm = summary["mismatches"]
    lines = [
        f"edgebnn run {summary['name']}: {headline(summary, est)}",
        f"  test samples          {summary['samples']}",
        f"  accuracy (Keras)      {100 * summary['accuracy_keras']:.2f}%",
        f"  accuracy (deployed)   {100 * summary['accuracy_deployed']:.2f}%  (C-simulation)",
        f"  mismatches            Keras vs emulator {mm['keras_vs_emulator']}, emulator vs C-sim {mm['emulator_vs_csim']}",
    ]
    for m in summary["first_mismatches"]:
        lines.append(f"    first {m['between']}: sample {m['sample']} at {m['layer']} ({m['source']})")
    lines += [f"  C-simulation          {w}" for w in summary.get("stream_leftovers", [])]
    lines += [f"  Keras caveat          node {c['node']!r}: {c['reason']}" for c in summary.get("keras_caveats", [])]
    lines.append(f"  resources on {summary['board']} ({summary['part']}):")
    lines += ["    " + line for line in est.table().splitlines()]
    lines.append(f"  project               {summary['project_dir']}  (build: vitis_hls -f build_prj.tcl)")
    return "\n".join(lines)
