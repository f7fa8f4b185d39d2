"""The stages of a run, each starting from the previous stage's saved output in a run folder.

``train`` (config -> model.keras) -> ``freeze`` (-> graph.npz) -> ``export`` (-> hls_project/)
-> ``csim`` (-> csim.npz) -> ``verify`` (-> verify.json) -> ``estimate`` (-> estimate.json)
-> ``report`` (-> report.html); ``edgebnn run`` runs them in that order. The folder's layout and
how a stage knows its inputs are current are in :mod:`edgebnn.runfolder`.

Everything a stage can check without doing its work is checked first: ``train`` checks the
configuration, the data, the board, the export options and that the untrained model's
structure freezes and exports before the run folder is touched.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import pathlib
import shlex
import shutil
import time
import warnings
import zipfile
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import progress
from ..errors import EdgebnnError, Terminated
from .config import ConfigError, build_model, is_rtl, load_config, target_of
from .runfolder import FILES, PROJECT_NAME, RunFolder, RunFolderError, resume_command

# what each stage reads; the configuration sections by name
TRAIN_INPUTS = ["config:name", "config:data", "config:model", "config:train"]
FREEZE_INPUTS = ["model.keras", "config:freeze", "config:name"]
EXPORT_INPUTS = ["graph.npz", "config:export", "config:board"]
CSIM_INPUTS = ["hls_project", "graph.npz", "config:data"]
VERIFY_INPUTS = ["model.keras", "graph.npz", "config:data"]
ESTIMATE_INPUTS = ["graph.npz", "config:export", "config:board"]
RTLSIM_INPUTS = ["rtl", "graph.npz", "config:data"]
SYNTH_INPUTS = ["rtl", "config:board"]
REPORT_INPUTS = ["history.json", "graph.npz", "verify.json", "estimate.json"]  # those the run has so far


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during training, with the line the command line ends with (it says
    whether a checkpoint was kept and how to resume)."""

    def __init__(self, line: str, terminated: bool = False):
        super().__init__(line)
        self.line = line
        self.terminated = terminated


# ---------------------------------------------------------------------- configuration and data
def run_config(run: RunFolder, layers: bool = True) -> dict[str, Any]:
    """The run folder's configuration (its config.yaml; relative data paths as the original
    configuration file's folder gave them, recorded in run.json). ``layers=False`` leaves the
    model's layers unchecked, which would import Keras (the sections' digests are the same)."""
    base = run.manifest().get("config_dir")
    return load_config(run / FILES["config"], base_dir=base, layers=layers)


def load_data(config: dict[str, Any], where):
    """The configuration's data (:class:`edgebnn.data.Data`: train, validation, test), refused in
    one line naming the key."""
    from ..training.data import DataError
    from ..training.data import load_data as load

    try:
        return load(**config["data"])
    except DataError as err:
        raise ConfigError(f"{os.fspath(where)}: key 'data': {err}") from None


def _check_input_type(config: dict[str, Any], data, where) -> None:
    """The data lie on the grid of the configured input type (Keras reads them as they are)."""
    from ..training.data import DataError, check_on_grid

    input_type = config["freeze"]["input_type"]
    if input_type is None:
        return
    scaling = {"scale": config["data"].get("scale", 1.0), "offset": config["data"].get("offset", 0.0)}
    try:
        check_on_grid((data.x_train, data.x_val, data.x_test), input_type, **scaling)
    except DataError as err:
        raise ConfigError(f"{os.fspath(where)}: key 'freeze.input_type': {err}") from None


def _check_export_untrained(model, input_type, target, where) -> None:
    """Refuse, before training, a model whose structure the export cannot build in the configured
    io type (e.g. a BatchNormalization head after a Flatten in io_stream): the untrained model is
    frozen (its weights as initialized) and the graph checked for the refusals its weights cannot
    change (``check_graph(structure_only=True)``). A freeze that fails on the untrained weights
    says nothing about the trained ones, so it refuses nothing."""
    from ..backends.hls4ml.exporter import check_graph
    from ..freeze import freeze

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
            f"{os.fspath(where)}: the model cannot be exported in {target.io_type} (checked before training): {err}"
        ) from None


def _export_board(config, where):
    """The configuration's board and target (:func:`_board_and_target`); an open-flow board (iCE40,
    ECP5) is refused for an hls4ml export, naming the configuration ``where``."""
    from ..boards import BoardError, require_hls4ml

    board, target = _board_and_target(config, where)
    if not is_rtl(config):
        try:
            require_hls4ml(board)
        except BoardError as err:
            raise ConfigError(f"{os.fspath(where)}: key 'board': {err}") from None
    return board, target


def _check_rtl_tools(board) -> None:
    """The RTL backend's tools, before any training: Verilator (simulation), Yosys and, on an
    iCE40 or ECP5 board, its nextpnr (synthesis, place and route)."""
    from ..backends.rtl.sim.build import verilator_root
    from ..backends.rtl.tools import find_tool

    verilator_root()
    find_tool("yosys")
    if board.flow != "xilinx":
        find_tool(f"nextpnr-{board.flow}")


def _check_rtl_untrained(model, input_type, config, where) -> None:
    """Refuse, before training, a model the RTL backend cannot build, or a folding it cannot
    take: the untrained model frozen and the design's checks run (a freeze that fails on the
    untrained weights refuses nothing, as for hls4ml)."""
    from ..backends.rtl import check
    from ..boards import load_board
    from ..freeze import freeze

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = freeze(model, input_type=input_type)
    except EdgebnnError:
        return
    folding = config["export"]["folding"]
    try:
        check(graph, None if folding == "auto" else folding)
        if folding == "auto":  # the search reads the structure, not the weights' values
            rtl_folding(graph, config, load_board(config["board"]), log=lambda msg: None)
    except EdgebnnError as err:
        raise ConfigError(
            f"{os.fspath(where)}: the model cannot be built by the rtl backend (checked before training): {err}"
        ) from None


def _check_labels(data, model, where) -> None:
    """The model's output is flat (one score per class, what the loss compares with a label) and
    every label is a class of the model (0 .. outputs - 1)."""
    from ..training.data import DataError, check_labels

    shape = tuple(model.output_shape[1:])
    if len(shape) != 1:
        raise ConfigError(
            f"{os.fspath(where)}: key 'model': the model's output has shape {shape} per sample, not one score per "
            "class; add a Flatten (or a GlobalAveragePooling2D after convolutions) before the last layer"
        )
    classes = int(shape[0])
    try:
        for name, y in (("training", data.y_train), ("validation", data.y_val), ("test", data.y_test)):
            if y is not None and len(y):
                check_labels(y, classes, f"the {name} labels")
    except DataError as err:
        raise ConfigError(f"{os.fspath(where)}: key 'data': {err}") from None


def _check_structure(model, input_type, x) -> None:
    """The model's structure freezes: as it is, or as the twin that the freeze stage calibrates
    on the data ``x`` (float layers and real-valued tensors where a grid is needed at 16 bits,
    the data's input type) when that is what it is refused for."""
    from ..fixed import propose_input_type
    from ..freeze import FreezeError, off_grid_tensors, plan
    from ..freeze.calibrate import _Specs, float_layers, twin

    try:
        plan(model, input_type=input_type)
        return
    except FreezeError:
        if not _calibration_helps(model, input_type):
            raise
    tensors = off_grid_tensors(model, x[:256], input_type=input_type)
    if float_layers(model) or tensors:
        specs = _Specs(model, x[:256], tensors=tensors)
        model = twin(model, specs(specs.widths(16)), specs.tensors(specs.widths(16)))
    try:
        plan(model, input_type=input_type)
    except FreezeError as err:
        if input_type is not None or "input_type" not in str(err):
            raise
        plan(model, input_type=propose_input_type(x))


def prepare(config: dict[str, Any], where, check_compile: bool = False):
    """Everything checked before training: the board, the export options, g++ (``check_compile``),
    the data and their grid, the model's structure (it freezes and exports) and the reuse factors.
    Returns (board, target, data, model) with the model built, seeded, untrained."""
    from ..backends.hls4ml import check_compiler, reuse
    from ..training.loop import seed_everything

    if config["train"].get("distribute") == "multi_worker":
        from ..training.distribute import strategy

        # before any TensorFlow work (it configures collective ops); names a bad TF_CONFIG
        strategy("multi_worker", config["train"]["worker_timeout"])
    board, target = _export_board(config, where)
    rtl = is_rtl(config)
    if check_compile:
        _check_rtl_tools(board) if rtl else check_compiler()
    data = load_data(config, where)
    input_type = config["freeze"]["input_type"]
    _check_input_type(config, data, where)
    seed_everything(config["train"]["seed"])
    model = build_model(config, data.x_train.shape[1:])
    _check_labels(data, model, where)
    _check_structure(model, input_type, data.x_train)  # it freezes and exports: refuse it now, not after training
    if rtl:
        _check_rtl_untrained(model, input_type, config, where)
        return board, target, data, model
    _check_export_untrained(model, input_type, target, where)
    try:  # and hls4ml builds every reuse factor as given
        reuse.check(target, reuse.matrices_of_model(model), model.name)
    except EdgebnnError as err:
        raise ConfigError(f"{os.fspath(where)}: key 'export.reuse_factor': {err}") from None
    return board, target, data, model


# ---------------------------------------------------------------------- train
def _train(model, data, config, checkpoint_dir, resume: bool, log):
    """edgebnn.train.train with the configuration's training keys, a progress bar per epoch on
    a terminal, and one log line per epoch at --verbose."""
    from ..training import loop as train_module

    params = inspect.signature(train_module.train).parameters
    kwargs = {k: v for k, v in config["train"].items() if k in params}
    extra = {
        "validation": (data.x_val, data.y_val) if data.x_val is not None else None,
        "checkpoint_dir": checkpoint_dir,
        "resume": resume,
    }
    epochs = config["train"]["epochs"]
    with progress.bar(epochs, "training", unit="epoch") as bar:

        def on_epoch(epoch, total, logs):
            bar.update(1)
            shown = {k: v for k, v in (logs or {}).items() if k in ("loss", "accuracy", "val_loss", "val_accuracy")}
            bar.set_postfix_str("  ".join(f"{k} {v:.4f}" for k, v in shown.items()))

        if "progress" in params:
            extra["progress"] = on_epoch
        kwargs.update({k: v for k, v in extra.items() if k in params and v is not None})
        if config["train"].get("distribute"):  # the strategy's variables: built under its scope, by train
            shape = data.x_train.shape[1:]
            model = lambda: build_model(config, shape)
        return train_module.train(model, data.x_train, data.y_train, log=log, **kwargs)


def _history(result, model) -> dict[str, Any]:
    """history.json's content from what train returned (a TrainResult or a Keras History)."""
    history = getattr(result, "history", None)
    if isinstance(history, dict) and "epoch" in history:
        return history
    if isinstance(history, dict):  # a Keras History
        n = len(next(iter(history.values()), []))
        out = {"epoch": list(range(1, n + 1))}
        out.update({k: [float(v) for v in vs] for k, vs in history.items()})
        out.setdefault("best_epoch", None)
        out.setdefault("stopped_early", False)
        return out
    return {"epoch": []}


@contextlib.contextmanager
def _interruptible(run_path: pathlib.Path, config: dict[str, Any], resumable: bool, resume_with: str) -> Iterator[None]:
    """Ctrl-C and SIGTERM during training end the command with a line saying whether the last
    checkpoint is kept (and the command that resumes it, ``resume_with``) or nothing was left."""
    from .. import outputs

    outputs._open_outputs += 1  # the signal handler raises here (the run folder is being written)
    try:
        yield
    except (KeyboardInterrupt, Terminated) as exc:
        terminated = isinstance(exc, Terminated)
        what = "terminated (SIGTERM)" if terminated else "interrupted"
        state = run_path / FILES["checkpoints"] / "state.json"
        epoch = getattr(exc, "epoch", None)
        if epoch is None and state.is_file():
            epoch = _completed_epoch(state)
        if resumable and state.is_file():
            done = f" after epoch {epoch} of {config['train']['epochs']}" if epoch is not None else ""
            raise Interrupted(
                f"edgebnn: {what}{done}; the last checkpoint is kept: resume with `{resume_with}`",
                terminated,
            ) from None
        raise
    finally:
        outputs._open_outputs -= 1


def _checkpoint_state(path: pathlib.Path) -> dict[str, Any] | None:
    """checkpoints/state.json as a dict, or None when missing or unreadable (train says why)."""
    import json

    try:
        with open(path, encoding="utf-8") as fh:
            state = json.load(fh)
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _finished(run: RunFolder, config: dict[str, Any], state: dict[str, Any]) -> str | None:
    """The line saying there is nothing to resume when the checkpoint's training has finished
    (every epoch, or stopped early) and model.keras is that training's, current with this
    configuration; else None (resuming trains)."""
    epochs = config["train"]["epochs"]
    done = state.get("epoch")
    if not isinstance(done, int) or state.get("epochs") != epochs:
        return None
    if done < epochs and not state.get("stopped_early"):
        return None
    try:
        run.require(FILES["model"], config)
        run.require(FILES["history"], config)
    except RunFolderError:
        return None
    trained = run.read_json(FILES["history"]).get("epoch") or []
    if len(trained) != done:
        return None
    if done < epochs:
        return f"already trained: stopped early after epoch {done} of {epochs}; nothing to do"
    return f"already trained all {epochs} epochs; nothing to do"


def _completed_epoch(state: pathlib.Path) -> int | None:
    import json

    try:
        with open(state, encoding="utf-8") as fh:
            value = json.load(fh).get("epoch")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def check_training_kept(run: RunFolder, start_over: str, force: bool = False, resume: bool = False) -> None:
    """Refuse a command that would discard the checkpoint of an unfinished training (the only
    copy of its epochs) unless it resumes it or ``force`` says to start over (``start_over``
    names that command)."""
    if resume or force:
        return
    unfinished = run.unfinished_training()
    if unfinished is not None:
        raise RunFolderError(
            f"run folder {str(run)!r} holds an unfinished training (stopped after epoch {unfinished['epoch']} of "
            f"{unfinished['epochs']}) that training again from epoch 1 would discard; continue it with "
            f"`{unfinished['resume']}`, or start over with `{start_over}`"
        )


def check_resumable(run: RunFolder) -> None:
    """``--resume`` needs a checkpoint in the run folder."""
    if not (run / FILES["checkpoints"] / "state.json").is_file():
        raise RunFolderError(
            f"run folder {str(run)!r} has no checkpoint to resume from; train it again with `edgebnn train {run}`"
        )


def _check_config_source(source, output, resume: bool) -> None:
    if resume:
        raise RunFolderError(
            f"--resume continues a run folder, not a configuration: use `edgebnn train RUN --resume` (RUN made by "
            f"`edgebnn train {os.fspath(source)} -o RUN`)"
        )
    if output is None:
        raise RunFolderError(f"name the run folder to make: `edgebnn train {os.fspath(source)} -o RUN`")


def check_train_first(source, output=None, force: bool = False, resume: bool = False) -> None:
    """What ``edgebnn train`` (and ``run``) refuse without Keras, in a fraction of a second before
    TensorFlow's start-up: a missing configuration or run folder, a configuration's keys (not its
    layers' arguments), a missing data file, an unknown board or one the export's backend does not
    build for, an existing output folder, a checkpoint that would be discarded or that is missing
    for ``resume``. :func:`train_stage` checks all of it again."""
    from ..outputs import check_output

    if os.path.isdir(os.fspath(source)) and output is None:
        run = RunFolder.open(source)
        check_training_kept(run, shlex.join(["edgebnn", "train", str(run), "--force"]), force=force, resume=resume)
        if resume:
            check_resumable(run)
        run_config(run, layers=False)
        return
    if output is None and not os.path.exists(os.fspath(source)):  # a run folder's name, or a configuration's
        raise ConfigError(
            f"{os.fspath(source)!r} does not exist; give a configuration file (`edgebnn train CONFIG -o RUN`) or a run "
            "folder `edgebnn train` made"
        )
    _check_config_source(source, output, resume)
    config = load_config(source, layers=False)
    check_data_files(config, source)
    _export_board(config, source)  # it exists, and the export's backend builds for it
    if config["train"].get("distribute") == "multi_worker":
        return  # only the chief writes the run folder; which task this is, the stage finds out
    check_unfinished_output(output, force)
    check_output(output, force=force, what="run folder", marked_only=True)


def check_data_files(config: dict[str, Any], where) -> None:
    """The data section's arguments and files (they exist, with the right extension), without
    reading them."""
    from ..training.data import DataError, check_arguments

    try:
        check_arguments(**config["data"])
    except DataError as err:
        raise ConfigError(f"{os.fspath(where)}: key 'data': {err}") from None


def train_stage(
    source,
    output=None,
    force: bool = False,
    resume: bool = False,
    log=progress.log,
    check_compile: bool = False,
    resume_with: str | None = None,
) -> RunFolder:
    """``edgebnn train``: ``source`` is a configuration file (a new run folder ``output``, or with
    ``force`` one replacing an earlier run folder) or a run folder (train it again from its
    config.yaml, with ``force`` when it holds an unfinished training, or ``resume`` from its last
    checkpoint). ``resume_with`` is the command line that resumes this training if it stops
    (default ``edgebnn train RUN --resume``): the interrupt's line and later refusals name it."""
    from ..outputs import check_output, staged_dir

    start = time.perf_counter()
    if os.path.isdir(os.fspath(source)) and output is None:
        run = RunFolder.open(source)
        resume_with = resume_with or resume_command("train", run.path)
        check_training_kept(run, shlex.join(["edgebnn", "train", str(run), "--force"]), force=force, resume=resume)
        config = run_config(run)
        where = run / FILES["config"]
        ckpt = run / FILES["checkpoints"]
        state = _checkpoint_state(ckpt / "state.json") if resume else None
        finished = _finished(run, config, state) if state is not None else None
        if finished is not None:  # nothing to train: every file stays as it is
            _result(log, finished)
            return run if _writes_run(config) else None
        if resume:
            check_resumable(run)
        board, target, data, model = prepare(config, where, check_compile)
        if not _writes_run(config):
            return _train_as_worker(model, data, config, run.path, ckpt if resume else None, log)
        manifest = run.manifest()
        manifest["resume"] = resume_with
        run.write_manifest(manifest)
        if not resume and ckpt.exists():
            shutil.rmtree(ckpt)  # training again from the start, as asked: the old checkpoints are train's own outputs
        log(f"data: {_describe(data)}")
        epochs = config["train"]["epochs"]
        done = (state or {}).get("epoch")
        if resume and isinstance(done, int):
            log(f"resuming {model.name} at epoch {done + 1} of {epochs}")
        else:
            log(f"training {model.name} for {epochs} epochs")
        with _interruptible(run.path, config, resumable=True, resume_with=resume_with):
            result = _train(model, data, config, ckpt, resume, log)
        _finish_train(run, result, model, config, start, log)
        return run
    _check_config_source(source, output, resume)
    config = load_config(source)
    if not _writes_run(config):  # the chief checks and writes the run folder; this worker only trains
        board, target, data, model = prepare(config, source, check_compile)
        return _train_as_worker(model, data, config, pathlib.Path(output), None, log)
    text = pathlib.Path(source).read_text(encoding="utf-8")
    check_unfinished_output(output, force)
    final = check_output(output, force=force, what="run folder", marked_only=True)
    resume_with = resume_with or resume_command("train", final)
    from ..backends.hls4ml import check_output_path

    check_output_path(final / FILES["project"])  # characters hls4ml's C-simulation build cannot take
    board, target, data, model = prepare(config, source, check_compile)
    manifest = {
        "config_source": os.path.abspath(source),
        "config_dir": os.path.dirname(os.path.abspath(source)),
        "resume": resume_with,
        "stages": {},
    }
    log(f"data: {_describe(data)}")
    log(f"training {model.name} for {config['train']['epochs']} epochs")
    if os.path.lexists(final):  # replace an earlier run only once this one is trained
        with staged_dir(final, force=True, what="run folder", marked_only=True) as tmp:
            run = RunFolder(tmp)
            run.write_text(FILES["config"], text)
            run.write_manifest(manifest)
            result = _train(model, data, config, tmp / FILES["checkpoints"], False, log)
            _finish_train(run, result, model, config, start, log)
        return RunFolder(final)
    made = [p for p in [final.parent, *final.parent.parents] if not os.path.lexists(p)]  # removed again on failure
    with staged_dir(final, what="run folder") as tmp:  # the empty run folder appears whole
        (tmp / FILES["config"]).write_text(text, encoding="utf-8")
        RunFolder(tmp).write_manifest(manifest)
    run = RunFolder(final)
    try:
        with _interruptible(run.path, config, resumable=True, resume_with=resume_with):
            result = _train(model, data, config, run / FILES["checkpoints"], False, log)
        _finish_train(run, result, model, config, start, log)
    except BaseException:
        if not (run / FILES["checkpoints"] / "state.json").is_file():  # nothing to resume: leave nothing
            shutil.rmtree(run.path, ignore_errors=True)
            for parent in made:
                with contextlib.suppress(OSError):
                    parent.rmdir()  # only if still empty
        raise
    return run


def check_unfinished_output(output, force: bool) -> None:
    """A new run's output folder ``output`` that is a run folder with an unfinished training is
    refused naming the command that continues it (``--force`` replaces it once the new run is
    trained, so its checkpoint is kept until then)."""
    if force or not os.path.isdir(os.fspath(output)):
        return
    try:
        run = RunFolder.open(output)
    except RunFolderError:
        return  # check_output says what is wrong with it
    unfinished = run.unfinished_training()
    if unfinished is not None:
        raise RunFolderError(
            f"run folder {str(run)!r} already exists and holds an unfinished training (stopped after epoch "
            f"{unfinished['epoch']} of {unfinished['epochs']}); continue it with `{unfinished['resume']}`, or pass --force "
            "to replace it once a new training has finished"
        )


def _writes_run(config) -> bool:
    """Whether this process writes the run folder: always, except a multi_worker task other than
    the chief (docs/distributed.md)."""
    if config["train"].get("distribute") != "multi_worker":
        return True
    from ..training.distribute import is_chief

    return is_chief()


def _train_as_worker(model, data, config, run_path: pathlib.Path, checkpoints, log) -> None:
    """A multi_worker task other than the chief: it trains in step with the others (resuming from
    the run folder's checkpoint when ``checkpoints`` is given) and writes nothing; the chief writes
    the run folder. Returns None (there is no run folder of its own)."""
    from ..training.distribute import tf_config

    cluster = tf_config()
    task = cluster["task"]
    log(f"data: {_describe(data)}")
    log(f"{task['type']} {task['index']}: training {model.name} with the other workers; the chief writes {os.fspath(run_path)!r}")
    _train(model, data, config, checkpoints, checkpoints is not None, log)
    return None


def _describe(data) -> str:
    source = getattr(data, "source", None)
    if isinstance(source, str) and ":" in source:
        return source
    val = f", {len(data.x_val)} validation" if data.x_val is not None else ""
    return f"{source}, {len(data.x_train)} training{val} and {len(data.x_test)} test samples"


def _finish_train(run: RunFolder, result, model, config, start: float, log=progress.log) -> None:
    """Save the trained model and its history, atomically, and record the stage."""
    trained = getattr(result, "model", None) or model
    _save_model(trained, run / FILES["model"])
    history = _history(result, trained)
    run.write_json(FILES["history"], history)
    run.record("train", run.inputs(TRAIN_INPUTS, config), time.perf_counter() - start, epochs=len(history.get("epoch", [])))
    best, ran = history.get("best_epoch"), len(history.get("epoch", []))
    if isinstance(best, int) and config["train"].get("restore_best", True):  # a validation set chose it
        _result(log, f"model.keras holds the best epoch {best} of {ran} (by validation)")


def _save_model(model, path: pathlib.Path) -> None:
    from ..outputs import OutputError, _reason

    tmp = path.with_name(f".{path.stem}.partial-{os.getpid()}.keras")
    try:
        model.save(tmp)
        os.replace(tmp, path)
    except OSError as err:
        raise OutputError(f"cannot write run folder {str(path.parent)!r}: {_reason(err)}") from None
    finally:
        if tmp.exists():
            tmp.unlink()


def load_trained(run: RunFolder, config):
    from .. import load_model

    path = run.require(FILES["model"], config)
    try:
        return load_model(path)
    except EdgebnnError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile) as err:  # Keras's words for a damaged file
        raise RunFolderError(
            f"{str(path)!r} cannot be loaded as a Keras model ({' '.join(str(err).split())[:160]}); train again with "
            f"`edgebnn train {run}`"
        ) from None


# ---------------------------------------------------------------------- freeze
def freeze_stage(run_dir, log=progress.log):
    from ..freeze import FreezeError, FreezeWarning, freeze

    start = time.perf_counter()
    run = RunFolder.open(run_dir)
    config = run_config(run)
    model = load_trained(run, config)
    log("freezing")
    kwargs = {"name": config["name"], "input_type": config["freeze"]["input_type"]}
    if config["freeze"].get("output_quantizer") is not None:
        kwargs["output_quantizer"] = config["freeze"]["output_quantizer"]
    inputs = FREEZE_INPUTS
    with warnings.catch_warnings(record=True) as caught, progress.working("freezing"):
        warnings.simplefilter("always", FreezeWarning)
        try:
            graph = freeze(model, **kwargs)
        except FreezeError:
            if not _calibration_helps(model, kwargs["input_type"]):
                raise
            # float layers, or floats read without an input type: calibrate them on the training data
            caught.clear()
            kwargs["data"] = load_data(config, run / FILES["config"]).x_train
            graph = freeze(model, **kwargs)
            inputs = [*FREEZE_INPUTS, "config:data"]
    notes = [str(w.message) for w in caught if issubclass(w.category, FreezeWarning)]
    for note in notes:
        log(f"  {note}" if note.startswith("calibrated") else f"  warning: {note}")
    graph.save(run / FILES["graph"])  # atomically
    run.record("freeze", run.inputs(inputs, config), time.perf_counter() - start, warnings=notes)
    return graph


def _calibration_helps(model, input_type) -> bool:
    """freeze with data would choose what the model is refused for: it has float layers, a
    real-valued tensor where the graph needs a grid, or its first layer reads floats and no
    input type is configured."""
    from ..freeze import FreezeError, plan
    from ..freeze.calibrate import float_layers
    from ..freeze.items import OffGrid

    if float_layers(model):
        return True
    try:
        plan(model, input_type=input_type)
    except OffGrid:
        return True
    except FreezeError as err:
        return input_type is None and "input_type" in str(err)
    return False


def _board_and_target(config, where=None):
    """The configuration's board profile and the target its export section builds for it; an
    unknown board is refused naming the configuration file ``where`` and its key."""
    from ..boards import BoardError, load_board

    try:
        board = load_board(config["board"])
    except BoardError as err:
        if where is None:
            raise
        raise ConfigError(f"{os.fspath(where)}: key 'board': {err}") from None
    return board, target_of(config, board)


def load_graph(run: RunFolder, config):
    from ..graph import Graph

    return Graph.load(run.require(FILES["graph"], config))


# ---------------------------------------------------------------------- export
def export_stage(run_dir, log=progress.log):
    """The run's graph as the hardware project its export section asks for: hls_project/ (hls4ml)
    or rtl/ (edgebnn's Verilog, backend rtl)."""
    from ..backends.hls4ml import HLSExportWarning, export

    start = time.perf_counter()
    run = RunFolder.open(run_dir)
    config = run_config(run)
    graph = load_graph(run, config)
    board, target = _export_board(config, run / FILES["config"])
    if is_rtl(config):
        return _export_rtl(run, config, graph, board, start, log)
    log(f"exporting the HLS project for {board.name} ({board.part}), {target.io_type}, {target.strategy}")
    with warnings.catch_warnings(), progress.working("exporting"):  # shown once, below, as log lines
        warnings.simplefilter("ignore", HLSExportWarning)
        project = export(graph, run / FILES["project"], target=target, project_name=PROJECT_NAME, force=True)
    for warning in project.warnings:
        log(f"  warning: {warning}")
    run.record("export", run.inputs(EXPORT_INPUTS, config), time.perf_counter() - start, warnings=list(project.warnings))
    return project


def rtl_folding(graph, config, board, log=progress.log) -> dict[str, tuple[int, int]]:
    """The folding (PE, SIMD) per weighted node of an rtl run: the configuration's, or with
    ``folding: auto`` the fastest one whose estimated resources fit the board (``rtl.fit``)."""
    folding = config["export"]["folding"]
    if folding != "auto":
        from ..backends.rtl import resolve_folding

        return resolve_folding(graph, folding)
    from ..backends.rtl.fit import fit

    with progress.working(f"choosing the folding that fits {board.name}"):
        result = fit(graph, board)
    if not result.fits:
        raise EdgebnnError(f"folding auto: {result}; choose a larger board, or give export.folding per layer to build it anyway")
    log(f"folding auto: {result}")
    return dict(result.folding)


def _export_rtl(run: RunFolder, config, graph, board, start: float, log):
    from ..backends.rtl import export

    folding = rtl_folding(graph, config, board, log)
    shown = ", ".join(f"{name} {pe}x{simd}" for name, (pe, simd) in folding.items()) or "none"
    log(f"exporting the RTL design for {board.name} ({board.part}), folding (PE x SIMD) {shown}")
    with progress.working("exporting"):
        project = export(graph, run / FILES["rtl"], folding=folding, force=True, top=f"{config['name']}_top")
    run.record(
        "export",
        run.inputs(EXPORT_INPUTS, config),
        time.perf_counter() - start,
        folding={k: list(v) for k, v in project.folding.items()},
    )
    return project


def open_project(run: RunFolder, config, graph=None):
    """The run's exported project, ready to compile (checked current: exported from this graph
    with this export section, and unchanged since)."""
    from ..backends.hls4ml import open_project as open_hls

    run.require(FILES["project"], config)
    graph = graph if graph is not None else load_graph(run, config)
    return open_hls(run / FILES["project"], graph, _board_and_target(config, run / FILES["config"])[1], PROJECT_NAME)


# ---------------------------------------------------------------------- csim
def csim_stage(run_dir, log=progress.log, processes: int | None = None):
    """Compile the run's C-simulation (g++, once per project content) and run it on the test
    set; the outputs go to csim.npz."""
    from ..backends.hls4ml import check_compiler

    start = time.perf_counter()
    run = RunFolder.open(run_dir)
    config = run_config(run)
    if is_rtl(config):
        return _simulate_rtl(run, config, start, log)
    check_compiler()
    graph = load_graph(run, config)
    project = open_project(run, config, graph)
    data = load_data(config, run / FILES["config"])
    began = []

    def building() -> None:  # said before g++'s seconds, also in a log (only when it runs: a cached build is quick)
        began.append(time.perf_counter())
        log("compiling the C-simulation (g++) ...")

    with progress.working("compiling the C-simulation (g++), unless a build of the same content is cached"):
        project.compile(on_build=building)
    if project.built:
        log(f"compiled the C-simulation in {time.perf_counter() - began[0]:.0f} s")
    else:
        log("using the cached C-simulation build")
    log(f"running the C-simulation on {len(data.x_test)} test samples")
    with progress.working(f"C-simulation of {len(data.x_test)} samples"):
        out = project.predict(data.x_test.astype(np.float64), processes=processes)
    from ..outputs import write_file

    leftovers = np.array(project.stream_warnings, dtype=str)
    write_file(
        run / FILES["csim"],
        lambda fh: np.savez(fh, outputs=out, stream_leftovers=leftovers),
        mode="wb",
        what=FILES["csim"],
    )
    accuracy = _accuracy(out, data.y_test)
    run.record("csim", run.inputs(CSIM_INPUTS, config), time.perf_counter() - start, accuracy=accuracy)
    _result(log, f"deployed accuracy (C-simulation) {100 * accuracy:.2f}% on {len(out)} test samples")
    if len(leftovers):
        _result(log, f"  the C-simulation left data in {len(leftovers)} stream(s): the hardware would stall there")
    return out


def _simulate_rtl(run: RunFolder, config, start: float, log):
    """The rtl run's design simulated by Verilator (built once per content) on the test set;
    the outputs and the measured cycles go to rtlsim.npz."""
    from ..backends.rtl import RTLProject
    from ..outputs import write_file

    project = RTLProject(run.require(FILES["rtl"], config))
    data = load_data(config, run / FILES["config"])
    log("compiling the RTL simulation (Verilator), unless a build of the same content is cached")
    with progress.working("compiling the RTL simulation (Verilator)"):
        project.compile()
    log("compiled the RTL simulation (Verilator)" if project.built else "using the cached RTL simulation build")
    log(f"running the RTL simulation on {len(data.x_test)} test samples")
    with progress.working(f"RTL simulation of {len(data.x_test)} samples"):
        out = project.predict(data.x_test.astype(np.float64))
    if project.cycles_per_sample is None:  # fewer than two test samples: measured on zeros
        project.measure()
    cycles, latency = float(project.cycles_per_sample), int(project.latency_cycles)
    write_file(
        run / FILES["rtlsim"],
        lambda fh: np.savez(fh, outputs=out, cycles_per_sample=cycles, latency_cycles=latency),
        mode="wb",
        what=FILES["rtlsim"],
    )
    accuracy = _accuracy(out, data.y_test)
    run.record(
        "csim",
        run.inputs(RTLSIM_INPUTS, config),
        time.perf_counter() - start,
        accuracy=accuracy,
        cycles_per_sample=cycles,
        latency_cycles=latency,
    )
    _result(
        log,
        f"deployed accuracy (RTL simulation) {100 * accuracy:.2f}% on {len(out)} test samples; "
        f"{cycles:g} cycles per sample, latency {latency} cycles",
    )
    return out


def read_rtlsim(run: RunFolder, config) -> dict[str, Any]:
    """rtlsim.npz (checked current) as outputs, cycles_per_sample and latency_cycles."""
    path = run.require(FILES["rtlsim"], config)
    try:
        with np.load(path, allow_pickle=False) as saved:
            return {
                "outputs": saved["outputs"],
                "cycles_per_sample": float(saved["cycles_per_sample"]),
                "latency_cycles": int(saved["latency_cycles"]),
            }
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:  # a damaged file
        raise RunFolderError(f"{str(path)!r} cannot be read ({err}); run `edgebnn csim {run}` again") from None


def _result(log, msg: str) -> None:
    """A stage's result line: printed also with --quiet (progress.QUIET) when the stage logs
    through the command line's progress.log; any other ``log`` gets it as every other line."""
    if log is progress.log:
        progress.log(msg, at=progress.QUIET)
    else:
        log(msg)


def _accuracy(outputs: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(outputs.reshape(len(outputs), -1), axis=1) == y))


class _SavedCsim:
    """The C-simulation's saved outputs, standing in for the project in :func:`edgebnn.verify`
    (which traces the real project only to locate a mismatch)."""

    def __init__(self, outputs, leftovers, opener):
        self._outputs, self.stream_warnings, self._opener = outputs, list(leftovers), opener

    def predict(self, x):
        return self._outputs

    def trace(self, x):
        return self._opener().trace(x)


# ---------------------------------------------------------------------- verify
def verify_stage(run_dir, log=progress.log) -> dict[str, Any]:
    """Keras = emulator (= C-simulation when csim ran) on the test set; verify.json."""
    from ..verify import verify

    start = time.perf_counter()
    run = RunFolder.open(run_dir)
    config = run_config(run)
    model = load_trained(run, config)
    graph = load_graph(run, config)
    data = load_data(config, run / FILES["config"])
    inputs = run.inputs(VERIFY_INPUTS, config)
    project = rtl = None
    if is_rtl(config):
        if (run / FILES["rtlsim"]).exists():
            saved = read_rtlsim(run, config)
            if len(saved["outputs"]) != len(data.x_test):
                raise RunFolderError(
                    f"{str(run / FILES['rtlsim'])!r} holds {len(saved['outputs'])} outputs for {len(data.x_test)} "
                    "test samples; run csim again"
                )
            rtl = _SavedCsim(saved["outputs"], [], lambda: _rtl_project(run, config))
            inputs[FILES["rtlsim"]] = run.digest(FILES["rtlsim"])
            legs = "Keras = emulator = RTL simulation"
        else:
            legs = "Keras = emulator (no RTL simulation yet: `edgebnn csim` adds it)"
    elif (run / FILES["csim"]).exists():
        path = run.require(FILES["csim"], config)
        try:
            with np.load(path, allow_pickle=False) as saved:
                outputs, leftovers = saved["outputs"], [str(s) for s in saved["stream_leftovers"]]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:  # a damaged file
            raise RunFolderError(f"{str(path)!r} cannot be read ({err}); run `edgebnn csim {run}` again") from None
        if len(outputs) != len(data.x_test):
            raise RunFolderError(
                f"{str(path)!r} holds {len(outputs)} outputs for {len(data.x_test)} test samples; run csim again"
            )
        project = _SavedCsim(outputs, leftovers, lambda: open_project(run, config, graph))
        inputs[FILES["csim"]] = run.digest(FILES["csim"])
        legs = "Keras = emulator = C-simulation"
    else:
        legs = "Keras = emulator (no C-simulation yet: `edgebnn csim` adds it)"
    log(f"verifying {legs} on {len(data.x_test)} test samples")
    with progress.working("verifying"):
        report = verify(model, graph, data.x_test, project=project, rtl=rtl)
    result = verify_json(report, data.y_test)
    calibration = graph.meta.get("calibration")
    if calibration:
        # Keras's leg is the model's twin with the calibrated quantizers; say how far the float model is
        float_acc = _accuracy(np.asarray(model.predict(data.x_test, verbose=0), dtype=np.float64), data.y_test)
        result["calibration"] = {"layers": calibration["layers"], "accuracy_float": float_acc}
        log(
            f"Keras's leg is the model's calibrated twin ({', '.join(calibration['layers'])} quantized): accuracy of the "
            f"float model {100 * float_acc:.2f}%, of the twin {100 * result['accuracy']['keras']:.2f}%"
        )
    run.write_json(FILES["verify"], result)
    run.record("verify", inputs, time.perf_counter() - start)
    write_summary(run, config)
    return result


def _rtl_project(run: RunFolder, config):
    from ..backends.rtl import RTLProject

    return RTLProject(run.require(FILES["rtl"], config))


def verify_json(report, y: np.ndarray) -> dict[str, Any]:
    """verify.json: the report, the accuracies and the deployed confusion matrix (of the
    simulated hardware, C or RTL, else the emulator)."""
    d = report.to_dict()
    outs = report.outputs
    classes = int(np.prod(outs["emulator"].shape[1:]))
    sim = "rtl" if "rtl" in outs else "csim"
    deployed = outs.get(sim, outs["emulator"])
    pred = np.argmax(deployed.reshape(len(deployed), -1), axis=1)
    matrix = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(matrix, (np.asarray(y, dtype=np.int64), pred), 1)
    return {
        "samples": d["samples"],
        "mismatches": {
            "keras_vs_emulator": d["keras_vs_emulator"],
            "emulator_vs_csim": d["emulator_vs_csim"],
            **({"emulator_vs_rtl": d["emulator_vs_rtl"]} if "emulator_vs_rtl" in d else {}),
        },
        "first_mismatches": d["first_mismatches"],
        "stream_leftovers": d["stream_leftovers"],
        "keras_caveats": d["keras_caveats"],
        "accuracy": {k: (_accuracy(outs[k], y) if k in outs else None) for k in ("keras", "emulator", "csim", "rtl")},
        "deployed": sim if sim in outs else "emulator",
        "classes": classes,
        "confusion_matrix": matrix.tolist(),
    }


def verified(result: dict[str, Any]) -> bool:
    return not any(result["mismatches"].values()) and not result["stream_leftovers"]


# ---------------------------------------------------------------------- estimate
def estimate_stage(run_dir, log=progress.log, limit: float = 0.8):
    """The run's graph on its board (as its export section builds it) and on every board profile:
    estimate.json, estimate.txt (the run's board) and estimate.csv (a row per node and board)."""
    from ..boards import list_boards
    from ..estimate import estimate

    start = time.perf_counter()
    run = RunFolder.open(run_dir)
    config = run_config(run, layers=False)  # estimation reads the graph, not the layers (no Keras)
    graph = load_graph(run, config)
    board, target = _board_and_target(config, run / FILES["config"])
    if is_rtl(config):
        return _estimate_rtl(run, config, graph, board, target, limit, start, log)
    boards = [board] + [b for b in list_boards() if b.name != board.name and b.hls4ml]
    results = []
    with progress.bar(len(boards), "estimating", unit="board") as bar:
        for b in boards:
            results.append(estimate(graph, b, utilization_limit=limit, target=target))
            bar.update(1)
    main = results[0]
    run.write_json(FILES["estimate"], {"board": board.name, "estimates": {e.board.name: e.to_dict() for e in results}})
    run.write_text(FILES["estimate_txt"], main.table() + "\n")
    run.write_text(FILES["estimate_csv"], estimates_csv(results))
    run.record("estimate", run.inputs(ESTIMATE_INPUTS, config), time.perf_counter() - start)
    write_summary(run, config)
    log(main.table())
    return main, results


def rtl_cycles(project) -> int:
    """The design's cycles per sample as its units declare them: the slowest unit's interval."""
    return max((int(c["interval"]) for c in project.meta["cycles"].values()), default=1)


def _estimate_rtl(run: RunFolder, config, graph, board, target, limit: float, start: float, log):
    """An rtl run's estimate: its design's cost model on the run's board (estimate.txt), beside
    hls4ml's estimate of the same graph on every board hls4ml builds for, with the export
    section's hls4ml options (estimate.json, estimate.csv)."""
    from ..backends.rtl.cost import Cost
    from ..backends.rtl.fit import unit_on_board
    from ..boards import list_boards
    from ..estimate import estimate

    project = _rtl_project(run, config)
    # each unit in the board's units (LUT4s and EBRs on iCE40 and ECP5), as the fit counts it
    per = {node.name: unit_on_board(graph, node, project.folding.get(node.name), board.flow) for node in graph.compute_nodes()}
    total = sum(per.values(), Cost())
    capacity = {"lut": board.lut, "ff": board.ff, "dsp": board.dsp, "bram": board.bram18}
    used = total.to_dict()
    utilization = {k: used[k] / v for k, v in capacity.items() if v}
    cycles = rtl_cycles(project)
    rtl = {
        "board": board.name,
        "part": board.part,
        "flow": board.flow,
        "folding": {k: list(v) for k, v in project.folding.items()},
        "total": used,
        "nodes": {name: c.to_dict() for name, c in per.items()},
        "capacity": capacity,
        "utilization": utilization,
        "utilization_limit": limit,
        "fits": all(u <= limit for u in utilization.values()),
        "cycles_per_sample": cycles,
    }
    boards = [b for b in list_boards() if b.hls4ml]
    results = []
    with progress.bar(len(boards), "estimating the hls4ml design beside it", unit="board") as bar:
        for b in boards:
            results.append(estimate(graph, b, utilization_limit=limit, target=target))
            bar.update(1)
    beside = board.name if board.hls4ml else "pynq-z2"
    run.write_json(
        FILES["estimate"],
        {
            "board": board.name,
            "backend": "rtl",
            "rtl": rtl,
            "hls4ml_board": beside,
            "estimates": {e.board.name: e.to_dict() for e in results},
        },
    )
    table = rtl_table(rtl)
    run.write_text(FILES["estimate_txt"], table + "\n")
    run.write_text(FILES["estimate_csv"], estimates_csv(results))
    run.record("estimate", run.inputs(ESTIMATE_INPUTS + ["rtl"], config), time.perf_counter() - start)
    write_summary(run, config)
    log(table)
    return rtl, results


def rtl_table(rtl: dict[str, Any]) -> str:
    """The RTL design's estimate as a table: a row per unit and the total with its share of the board."""
    keys = ("lut", "ff", "carry", "dsp", "bram")
    rows = [("node", *keys)] + [(name, *(f"{c[k]:,}" for k in keys)) for name, c in rtl["nodes"].items()]
    rows.append(("total", *(f"{rtl['total'][k]:,}" for k in keys)))
    share = rtl["utilization"]
    rows.append(("% of board", *(f"{100 * share[k]:.1f}%" if k in share else "-" for k in keys)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(keys) + 1)]
    lines = [
        f"RTL design on {rtl['board']} ({rtl['part']}), estimated before synthesis; {rtl['cycles_per_sample']} cycles per sample"
    ]
    lines += ["  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(r, widths))) for r in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------- synth
def synth_stage(run_dir, log=progress.log, timeout: float | None = None) -> dict[str, Any]:
    """Synthesize the rtl run's design with Yosys (and place and route it with nextpnr on an
    iCE40 or ECP5 board) for its board: rtl/synth/<flow>/ (scripts, logs, reports) and synth.json."""
    from ..backends.rtl.synth import DEFAULT_TIMEOUT_S, synthesize

    start = time.perf_counter()
    run = RunFolder.open(run_dir)
    config = run_config(run, layers=False)
    if not is_rtl(config):
        raise RunFolderError(
            f"run {str(run.path)!r} exports an hls4ml project (export backend {config['export']['backend']}), which "
            "Vitis HLS and Vivado synthesize (`vitis_hls -f build_prj.tcl` in hls_project/); edgebnn synth builds "
            "the rtl backend's design (set export: {backend: rtl})"
        )
    board, _ = _board_and_target(config, run / FILES["config"])
    project = _rtl_project(run, config)
    record = synthesize(project, board, timeout=timeout or DEFAULT_TIMEOUT_S, log=log)
    inputs = run.inputs(SYNTH_INPUTS, config)
    if (run / FILES["rtlsim"]).exists():
        sim = read_rtlsim(run, config)
        cycles, latency, measured = sim["cycles_per_sample"], sim["latency_cycles"], "RTL simulation"
        inputs[FILES["rtlsim"]] = run.digest(FILES["rtlsim"])
    else:
        cycles, latency, measured = float(rtl_cycles(project)), None, "the units' declared intervals"
    clock = record.fmax_mhz if record.fmax_mhz is not None else record.clock_mhz
    result = {
        **record.to_dict(),
        "utilization": record.utilization(),
        "cycles_per_sample": cycles,
        "latency_cycles": latency,
        "cycles_from": measured,
        "samples_per_s": None if not clock else clock * 1e6 / cycles,
        "samples_per_s_at": None if not clock else ("fmax" if record.fmax_mhz is not None else "board clock"),
    }
    run.write_json(FILES["synth"], result)
    run.record("synth", inputs, time.perf_counter() - start)
    write_summary(run, config)
    rate = "" if result["samples_per_s"] is None else f", {result['samples_per_s']:,.0f} samples/s at {clock:g} MHz"
    _result(log, f"synthesized: {record}{rate}")
    return result


CSV_COLUMNS = ("board", "node", "op", "lut", "ff", "dsp", "bram18", "uram", "latency", "ii")


def estimates_csv(results) -> str:
    """One row per node and board, then a ``total`` row per board (latency on the slowest path)."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for est in results:
        for r in est.rows:
            writer.writerow([est.board.name, r.name, r.op, *r.resources().values(), r.latency, r.ii])
        writer.writerow([est.board.name, "total", "", *est.totals.values(), est.latency_cycles, est.ii])
    return buf.getvalue()


# ---------------------------------------------------------------------- report
def report_stage(run_dir, log=progress.log):
    """report.html and report.json from what the run folder holds."""
    from . import report

    run = RunFolder.open(run_dir)
    start = time.perf_counter()
    config = run_config(run, layers=False)  # its sections' digests, without importing Keras
    read = [name for name in REPORT_INPUTS if (run / name).exists()]
    for name in read:  # current, as for every other stage: else the line names the stage to run again
        run.require(name, config)
    html, js = report.write(run.path)
    run.record("report", {name: run.digest(name) for name in read}, time.perf_counter() - start)
    log(f"report: {html}")
    return html, js


# ---------------------------------------------------------------------- summary.json
def rtl_summary(run: RunFolder) -> dict[str, Any] | None:
    """summary.json's ``rtl`` section: the synthesized design's counts, Fmax and throughput
    (synth.json), else the simulation's cycles alone; None before either ran."""
    keys = ("flow", "part", "lut", "ff", "carry", "dsp", "bram", "fmax_mhz", "clock_mhz", "utilization")
    out: dict[str, Any] = {}
    if (run / FILES["synth"]).exists():
        s = run.read_json(FILES["synth"])
        out.update({k: s.get(k) for k in keys})
        out.update(cycles_per_sample=s["cycles_per_sample"], latency_cycles=s["latency_cycles"], samples_per_s=s["samples_per_s"])
    elif (run / FILES["rtlsim"]).exists():
        with np.load(run / FILES["rtlsim"], allow_pickle=False) as saved:
            out.update(cycles_per_sample=float(saved["cycles_per_sample"]), latency_cycles=int(saved["latency_cycles"]))
    return out or None


def write_summary(run: RunFolder, config) -> dict[str, Any]:
    """summary.json from what the run folder holds now (verify.json, estimate.json)."""
    board, target = _board_and_target(config, run / FILES["config"])
    summary: dict[str, Any] = {
        "name": config["name"],
        "board": board.name,
        "part": board.part,
        "project_dir": str(run / FILES["project"]),
        "graph": str(run / FILES["graph"]),
        "model": str(run / FILES["model"]),
        "export": config["export"],
        "target": target.to_dict(),
    }
    if (run / FILES["verify"]).exists():
        v = run.read_json(FILES["verify"])
        summary.update(
            samples=v["samples"],
            accuracy_keras=v["accuracy"]["keras"],
            accuracy_emulator=v["accuracy"]["emulator"],
            accuracy_deployed=v["accuracy"].get("rtl" if is_rtl(config) else "csim"),
            mismatches=v["mismatches"],
            first_mismatches=v["first_mismatches"],
            stream_leftovers=v["stream_leftovers"],
            keras_caveats=v["keras_caveats"],
        )
    if (run / FILES["estimate"]).exists():
        e = run.read_json(FILES["estimate"])
        summary["resources"] = e["estimates"].get(e.get("hls4ml_board", e["board"]))
        if "rtl" in e:
            summary["rtl_estimate"] = e["rtl"]
    if is_rtl(config):
        summary["project_dir"] = str(run / FILES["rtl"])
        summary["rtl"] = rtl_summary(run)
    stages = run.manifest()["stages"]
    summary["stage_seconds"] = {name: rec.get("seconds") for name, rec in stages.items()}
    summary["seconds"] = round(sum(v or 0 for v in summary["stage_seconds"].values()), 1)
    run.write_json(FILES["summary"], summary)
    return summary
