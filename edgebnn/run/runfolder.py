"""A run folder: what each stage of the command line reads and writes, and what made each file.

One folder holds one configuration's run, stage by stage::

    .edgebnn-output    marker: edgebnn wrote this folder (``--force`` replaces only such folders)
    config.yaml        the configuration, as given (``train`` copies it; stages read it from here)
    run.json           tool versions, and per finished stage when it ran, its seconds, and a
                       digest of every input it read (files, and the configuration sections)
    model.keras        train: the trained model (the best epoch's with a validation set)
    history.json       train: loss, accuracy and learning rate per epoch
    checkpoints/       train: last.keras and state.json every epoch (best.keras with validation)
    graph.npz          freeze: the deployment graph
    hls_project/       export: the hls4ml project
    rtl/               export (backend rtl): the Verilog design, its simulation harness, and
                       synth/<flow>/ (synth: the Yosys and nextpnr scripts, logs and reports)
    csim.npz           csim: the C-simulation's outputs on the test set
    rtlsim.npz         csim (backend rtl): the RTL simulation's outputs and measured cycles
    synth.json         synth (backend rtl): the synthesized and placed design's counts and Fmax
    verify.json        verify: mismatches per leg, accuracies, the confusion matrix
    estimate.json      estimate: the run's board and every board profile (.txt and .csv too)
    report.html        report: one self-contained page (and report.json)
    summary.json       the run's summary (accuracy, mismatches, resources, export options)

Every file is written completely or not at all, and a stage replaces only its own outputs. A stage
that reads another's output first checks that output is current: the inputs recorded for it in
``run.json`` still have the same digest (``edgebnn freeze`` after a new ``edgebnn train``, before
``edgebnn csim``). An out-of-date input is refused in one line naming the stage to run again.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import pathlib
import platform
from typing import Any

from ..errors import EdgebnnError
from ..outputs import MARKER, write_file

FILES = {
    "config": "config.yaml",
    "manifest": "run.json",
    "model": "model.keras",
    "history": "history.json",
    "checkpoints": "checkpoints",
    "graph": "graph.npz",
    "project": "hls_project",
    "csim": "csim.npz",
    "rtl": "rtl",
    "rtlsim": "rtlsim.npz",
    "synth": "synth.json",
    "verify": "verify.json",
    "estimate": "estimate.json",
    "estimate_txt": "estimate.txt",
    "estimate_csv": "estimate.csv",
    "report_html": "report.html",
    "report_json": "report.json",
    "summary": "summary.json",
}

# the stage that makes each output
MADE_BY = {
    "model.keras": "train",
    "history.json": "train",
    "graph.npz": "freeze",
    "hls_project": "export",
    "csim.npz": "csim",
    "rtl": "export",
    "rtlsim.npz": "csim",
    "synth.json": "synth",
    "verify.json": "verify",
    "estimate.json": "estimate",
    "report.html": "report",
}

PROJECT_NAME = "myproject"  # the HLS top function of an exported run


class RunFolderError(EdgebnnError):
    """A run folder that is missing, not edgebnn's, or lacks what a stage needs."""


def tool_versions() -> dict[str, str]:
    """The versions of the tools a run depends on (read from the installed packages: importing
    TensorFlow only to ask would take seconds)."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("edgebnn", "keras", "tensorflow", "hls4ml", "numpy", "scikit-learn"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def sha256_file(path: os.PathLike | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def section_digest(config: dict[str, Any], section: str) -> str:
    """A digest of one section of a loaded configuration (what a stage read of it)."""
    text = json.dumps(config.get(section), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class RunFolder:
    """A run folder on disk (see the module docstring)."""

    def __fspath__(self) -> str:
        return str(self.path)

    def __init__(self, path: os.PathLike | str):
        self.path = pathlib.Path(os.path.abspath(os.fspath(path)))

    def __str__(self) -> str:
        return str(self.path)

    def __truediv__(self, name: str) -> pathlib.Path:
        return self.path / name

    @classmethod
    def open(cls, path: os.PathLike | str) -> RunFolder:
        """An existing run folder; refused in one line when it is not one."""
        if isinstance(path, RunFolder):
            path = path.path
        run = cls(path)
        shown = os.fspath(path)
        if not run.path.exists():
            raise RunFolderError(f"run folder {shown!r} does not exist; make it with `edgebnn train CONFIG -o {shown}`")
        if not run.path.is_dir():
            raise RunFolderError(f"{shown!r} is a file, not a run folder; give the folder `edgebnn train` made")
        if (
            (run.path / MARKER).is_file()
            and (run.path / FILES["summary"]).is_file()
            and not (run.path / FILES["config"]).is_file()
        ):
            raise RunFolderError(
                f"{shown!r} was made by an edgebnn before 0.2 (it has no config.yaml and run.json, which the stages read); "
                f"make it again with `edgebnn run CONFIG -o {shown} --force` (`edgebnn estimate {shown}` still reads it)"
            )
        if not (run.path / MARKER).is_file() or not (run.path / FILES["config"]).is_file():
            raise RunFolderError(
                f"{shown!r} is not an edgebnn run folder (it has no {MARKER} and config.yaml); give the folder "
                "`edgebnn train CONFIG -o RUN` made, or make one with RUN a new folder's path"
            )
        return run

    # ------------------------------------------------------------------ the manifest
    def manifest(self) -> dict[str, Any]:
        try:
            with open(self.path / FILES["manifest"], encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return {"stages": {}}
        except (OSError, ValueError) as err:
            raise RunFolderError(
                f"{str(self.path / FILES['manifest'])!r} cannot be read ({err}); it records what made each file: "
                "run the stages again (`edgebnn run`)"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("stages"), dict):
            raise RunFolderError(f"{str(self.path / FILES['manifest'])!r} is not a run manifest; run the stages again")
        return data

    def write_manifest(self, data: dict[str, Any]) -> None:
        self.write_json(FILES["manifest"], data)

    def record(self, stage: str, inputs: dict[str, str], seconds: float, **extra: Any) -> None:
        """Note in run.json that ``stage`` finished, with the digests of what it read."""
        data = self.manifest()
        data["versions"] = tool_versions()
        data["stages"][stage] = {
            "edgebnn": _version(),  # a section's digest covers its defaults, which a later version may add to
            "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "seconds": round(seconds, 2),
            "inputs": inputs,
            **extra,
        }
        self.write_manifest(data)

    def stage_record(self, stage: str) -> dict[str, Any] | None:
        return self.manifest()["stages"].get(stage)

    def unfinished_training(self) -> dict[str, Any] | None:
        """The training whose checkpoint holds work that model.keras does not (it stopped before
        its last epoch: Ctrl-C, SIGTERM, a crash), as ``{"epoch", "epochs", "resume"}`` with the
        command that continues it (the one that started it: ``edgebnn run ... --resume`` or
        ``edgebnn train RUN --resume``); None when there is none. That checkpoint is the only
        copy of those epochs, so no command discards it without being told to."""
        state = _read_state(self.path / FILES["checkpoints"] / "state.json")
        if state is None:
            return None
        done, epochs = state["epoch"], state["epochs"]
        try:
            manifest = self.manifest()
        except RunFolderError:
            manifest = {"stages": {}}
        if done >= epochs or state.get("stopped_early"):
            record = manifest["stages"].get("train")
            if (self.path / FILES["model"]).exists() and isinstance(record, dict) and record.get("epochs") == done:
                return None  # finished, and model.keras is that training's
        resume = manifest.get("resume")
        if not isinstance(resume, str) or not resume:
            resume = resume_command("train", self.path)
        return {"epoch": done, "epochs": epochs, "resume": resume}

    # ------------------------------------------------------------------ inputs and freshness
    def digest(self, name: str, config: dict[str, Any] | None = None) -> str:
        """The digest of an input: a file of the folder, the project folder (its C-simulation
        content key) or ``config:<section>``."""
        if name.startswith("config:"):
            if config is None:
                raise ValueError("a configuration section's digest needs the configuration")
            return section_digest(config, name.partition(":")[2])
        if name == FILES["project"]:
            from ..backends.hls4ml.csim_cache import content_key

            return content_key(self.path / name, PROJECT_NAME)
        if name == FILES["rtl"]:  # the design (a simulation build or a synthesis adds files, not content)
            return design_digest(self.path / name)
        return sha256_file(self.path / name)

    def require(self, name: str, config: dict[str, Any] | None = None, _checked: set[str] | None = None) -> pathlib.Path:
        """The path of ``name``, after checking it exists and is current: the inputs recorded for
        the stage that made it have not changed since, and those made by an earlier stage are
        current themselves (csim.npz is out of date once its hls_project is, after an edited
        ``export`` section), so the line names the earliest stage to run again."""
        checked = set() if _checked is None else _checked
        checked.add(name)
        stage = MADE_BY.get(name)
        path = self.path / name
        if not path.exists():
            untrained = stage == "train" or not (self.path / FILES["model"]).exists()
            unfinished = self.unfinished_training() if untrained else None
            if unfinished is not None:
                raise RunFolderError(
                    f"run folder {str(self.path)!r} has no {name} yet: its training stopped after epoch "
                    f"{unfinished['epoch']} of {unfinished['epochs']}; continue it with `{unfinished['resume']}`"
                )
            raise RunFolderError(f"run folder {str(self.path)!r} has no {name} yet; run `edgebnn {stage} {self.path}` first")
        record = self.stage_record(stage) if stage else None
        if record is None:
            raise RunFolderError(
                f"{str(path)!r} is not recorded in run.json as made by `edgebnn {stage}`; run `edgebnn {stage} {self.path}`"
            )
        inputs = record.get("inputs", {})
        for dep in inputs:  # the earlier stages' outputs first: the earliest stage out of date is named
            if dep in MADE_BY and dep not in checked and (self.path / dep).exists():
                self.require(dep, config, checked)
        for dep, recorded in inputs.items():
            try:
                now = self.digest(dep, config)
            except OSError:
                now = None
            if now != recorded:
                what = f"the configuration's {dep.partition(':')[2]!r} section" if dep.startswith("config:") else dep
                made_with = record.get("edgebnn", self.manifest().get("versions", {}).get("edgebnn"))
                if dep.startswith("config:") and made_with != _version():  # the keys and defaults may differ
                    what += f" (as edgebnn {_version()} reads it: edgebnn {made_with or 'before 0.2'} made it)"
                raise RunFolderError(
                    f"{name} in {str(self.path)!r} is out of date: {what} changed since `edgebnn {stage}` made it; "
                    f"run `edgebnn {stage} {self.path}` again"
                )
        return path

    def inputs(self, names: list[str], config: dict[str, Any] | None = None) -> dict[str, str]:
        """The digests of the inputs a stage reads, to record."""
        return {name: self.digest(name, config) for name in names}

    # ------------------------------------------------------------------ writing
    def write_json(self, name: str, data: Any) -> pathlib.Path:
        path = self.path / name
        text = json.dumps(data, indent=2, default=_jsonable) + "\n"
        write_file(path, lambda fh: fh.write(text), what=name)
        return path

    def write_text(self, name: str, text: str) -> pathlib.Path:
        path = self.path / name
        write_file(path, lambda fh: fh.write(text), what=name)
        return path

    def read_json(self, name: str) -> Any:
        path = self.path / name
        try:
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError) as err:
            raise RunFolderError(f"{str(path)!r} cannot be read ({err}); run the stage that makes it again") from None


def resume_command(command: str, run: os.PathLike | str, config: os.PathLike | str | None = None) -> str:
    """The command line that continues the training a command started: ``edgebnn run CONFIG -o
    RUN --resume`` (the whole run) after ``run``, ``edgebnn train RUN --resume`` after ``train``."""
    import shlex

    run = os.path.abspath(os.fspath(run))
    if command == "run" and config is not None:
        return shlex.join(["edgebnn", "run", os.path.abspath(os.fspath(config)), "-o", run, "--resume"])
    return shlex.join(["edgebnn", "train", run, "--resume"])


def _read_state(path: pathlib.Path) -> dict[str, Any] | None:
    """A checkpoint's state.json with its epoch counts, or None when missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as fh:
            state = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    done, epochs = state.get("epoch"), state.get("epochs")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (done, epochs)):
        return None
    return state


def design_digest(folder: pathlib.Path) -> str:
    """The SHA-256 of an RTL project's design: its project.json and every file of its hdl/ (the
    Verilog and the ROM contents), by relative path."""
    digest = hashlib.sha256()
    files = [folder / "project.json", *sorted(p for p in (folder / "hdl").rglob("*") if p.is_file())]
    for path in files:
        rel = path.relative_to(folder).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(rel).to_bytes(8, "little") + rel + len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def _jsonable(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _version() -> str:
    from .. import __version__

    return __version__
