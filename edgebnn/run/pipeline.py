"""``edgebnn run``: every stage in order (train, freeze, export, C-simulate, verify, estimate,
report) into one run folder, and the summary it ends with.

Each stage writes its own outputs completely or not at all (:mod:`edgebnn.stages`), so a run that
stops, or is interrupted, keeps the stages it finished: training resumes from its last checkpoint
(``edgebnn run CONFIG -o RUN --resume``) and any later stage can be run again alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any


def run(
    config_path: str | os.PathLike,
    output_dir: str | os.PathLike,
    force: bool = False,
    log: Callable[[str], None] = print,
    resume: bool = False,
) -> dict[str, Any] | None:
    """Run every stage for one configuration (:mod:`edgebnn.stages`); returns the summary (also in
    summary.json), or None in a multi_worker task other than the chief, which only trains.

    Everything that can be checked without training is checked first, before the output folder
    is touched: the configuration's keys and ranges, the board, the export options, g++, the
    output path, that the model's structure can be frozen and exported, and that hls4ml builds
    each layer's reuse factor as given. With ``resume``, ``output_dir`` is a run folder whose
    training was interrupted: it continues from the last checkpoint, then runs the rest.
    """
    from ..errors import Terminated
    from ..outputs import interrupt_note
    from . import stages
    from .runfolder import resume_command

    resume_with = resume_command("run", output_dir, config_path)  # an interrupt's line names the whole run's command
    if resume:
        run_folder = stages.train_stage(output_dir, resume=True, log=log, resume_with=resume_with)
    else:
        run_folder = stages.train_stage(
            config_path, output_dir, force=force, log=log, check_compile=True, resume_with=resume_with
        )
    if run_folder is None:  # a multi_worker task other than the chief: it only trains
        return None
    rtl = stages.is_rtl(stages.run_config(stages.RunFolder.open(run_folder), layers=False))
    note = f"the trained model and every finished stage are kept: continue with `{resume_with}`"
    try:
        with interrupt_note(note):
            stages.freeze_stage(run_folder, log=log)
            stages.export_stage(run_folder, log=log)
            stages.csim_stage(run_folder, log=log)
            stages.verify_stage(run_folder, log=log)
            if rtl:
                stages.synth_stage(run_folder, log=log)
            est, _ = stages.estimate_stage(run_folder, log=lambda msg: None)
            stages.report_stage(run_folder, log=log)
    except (KeyboardInterrupt, Terminated) as exc:  # while a stage was writing its output (removed on the way out)
        terminated = isinstance(exc, Terminated)
        what = "terminated (SIGTERM)" if terminated else "interrupted"
        raise stages.Interrupted(f"edgebnn: {what}; {note}", terminated) from None
    summary = json.loads((run_folder / "summary.json").read_text())
    log("")
    log(format_rtl_summary(summary) if rtl else format_summary(summary, est))
    return summary


def rtl_headline(summary: dict[str, Any]) -> str:
    """An rtl run's verdict: bit-exact or not, and whether the synthesized design fits the board
    (Yosys's counts; nextpnr's placement on iCE40 and ECP5)."""
    verified = not any(summary["mismatches"].values())
    rtl = summary.get("rtl") or {}
    share = rtl.get("utilization")
    if share:
        key = max(share, key=lambda k: share[k])
        fits = share[key] <= 1.0
        fit = f"fits {summary['board']}" if fits else f"DOES NOT FIT {summary['board']} ({key.upper()} {100 * share[key]:.0f}%)"
    else:
        fits, fit = True, "not synthesized yet"
    if verified:
        return f"VERIFIED bit for bit, {'and ' + fit if fits else 'but ' + fit}"
    return f"MISMATCH (not bit-exact); {fit}"


def format_rtl_summary(summary: dict[str, Any]) -> str:
    mm = summary["mismatches"]
    rtl = summary.get("rtl") or {}
    lines = [
        f"edgebnn run {summary['name']}: {rtl_headline(summary)}",
        f"  test samples          {summary['samples']}",
        f"  accuracy (Keras)      {100 * summary['accuracy_keras']:.2f}%",
        f"  accuracy (deployed)   {100 * summary['accuracy_deployed']:.2f}%  (RTL simulation)",
        f"  mismatches            Keras vs emulator {mm['keras_vs_emulator']}, emulator vs RTL {mm.get('emulator_vs_rtl')}",
    ]
    for m in summary["first_mismatches"]:
        lines.append(f"    first {m['between']}: sample {m['sample']} at {m['layer']} ({m['source']})")
    lines += [f"  Keras caveat          node {c['node']!r}: {c['reason']}" for c in summary.get("keras_caveats", [])]
    if "lut" in rtl:
        share = rtl.get("utilization") or {}
        pct = lambda k: f" ({100 * share[k]:.1f}%)" if k in share else ""
        lines.append(f"  synthesized on {summary['board']} ({rtl['part']}, {rtl['flow']} flow):")
        lines.append(
            f"    LUT {rtl['lut']:,}{pct('lut')}, FF {rtl['ff']:,}{pct('ff')}, CARRY {rtl['carry']:,}, "
            f"DSP {rtl['dsp']}{pct('dsp')}, BRAM {rtl['bram']}{pct('bram')}"
        )
        if rtl.get("fmax_mhz") is not None:
            clock = rtl.get("clock_mhz")
            short = f"; below the board's {clock:g} MHz clock" if clock and rtl["fmax_mhz"] < clock else ""
            lines.append(f"    Fmax {rtl['fmax_mhz']:.1f} MHz (placed and routed by nextpnr{short})")
    if rtl.get("cycles_per_sample") is not None:
        rate = rtl.get("samples_per_s")
        lines.append(
            f"  throughput            {rtl['cycles_per_sample']:g} cycles per sample"
            + (f", {rate:,.0f} samples/s" if rate else "")
            + (f", latency {rtl['latency_cycles']} cycles" if rtl.get("latency_cycles") is not None else "")
        )
    lines.append(f"  design                {summary['project_dir']}  (synthesis: synth/<flow>/run.sh)")
    return "\n".join(lines)


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
    if not est.fits:
        run = os.path.dirname(summary["graph"])
        lines.append(f"  next step             `edgebnn estimate {run} --fit`: the reuse factors that fit, per board")
    lines.append(f"  project               {summary['project_dir']}  (build: {build_hint(summary)})")
    return "\n".join(lines)


def build_hint(summary: dict[str, Any]) -> str:
    """The command that synthesizes the exported project: hls4ml's Vivado backend writes a
    build_prj.tcl for Vivado HLS, its Vitis backend one for Vitis HLS."""
    backend = (summary.get("target") or {}).get("backend") or "Vitis"
    return "vivado_hls -f build_prj.tcl" if backend == "Vivado" else "vitis_hls -f build_prj.tcl"
