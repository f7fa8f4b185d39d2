"""Hostile inputs: every bad input gets one clear line and a documented exit code, leaves
nothing behind and destroys nothing. docs/errors.md lists these cases and their answers."""

import errno
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

from edgebnn import cli
from edgebnn.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES,
    EXIT_DOES_NOT_FIT,
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    EXIT_MISMATCH,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USER_ERROR,
    EdgebnnError,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "digits_bnn.yaml")


def base_config():
    with open(EXAMPLE) as fh:
        config = yaml.safe_load(fh)
    config["train"]["epochs"] = 1
    return config


def write_config(tmp_path, config=None, text=None, name="c.yaml"):
    path = tmp_path / name
    if text is not None:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    else:
        path.write_text(yaml.safe_dump(config if config is not None else base_config()))
    return path


def one_line(capsys) -> str:
    """The single line edgebnn printed on stderr."""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("edgebnn: ") and "Traceback" not in err
    return lines[0]


def listing(folder):
    return sorted(os.listdir(folder))


@pytest.fixture
def no_training(monkeypatch):
    """Fail the test if training starts: for checks that must come before it."""
    train_module = importlib.import_module("edgebnn.train")

    def must_not_train(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setattr(train_module, "train", must_not_train)


@pytest.fixture
def graph_file(tmp_path):
    from graphs import binary_mlp

    path = tmp_path / "graph.npz"
    binary_mlp(sizes=(4, 3, 2), seed=3).save(path)
    return path


# ------------------------------------------------------------------------- exit codes
def test_exit_codes_are_distinct_and_documented(capsys):
    codes = [code for code, _ in EXIT_CODES]
    assert len(set(codes)) == len(codes) == 8
    assert (
        EXIT_OK,
        EXIT_MISMATCH,
        EXIT_USER_ERROR,
        EXIT_DOES_NOT_FIT,
        EXIT_INTERNAL_ERROR,
        EXIT_INTERRUPTED,
        EXIT_TERMINATED,
        EXIT_BROKEN_PIPE,
    ) == (0, 1, 2, 3, 4, 130, 143, 141)
    assert cli.main(["--help"]) == 0
    help_text = capsys.readouterr().out
    with open(os.path.join(ROOT, "README.md")) as fh:
        readme = fh.read()
    for code, meaning in EXIT_CODES:
        assert re.search(rf"^\s+{code}\s+{re.escape(meaning)}$", help_text, re.MULTILINE), code
        assert f"| {code} | {meaning} |" in readme, code
    assert "docs/errors.md" in readme


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["run", EXAMPLE],
        ["estimate", "g.npz", "--reuse-factor", "many"],
        ["estimate", "g.npz", "--strategy", "Fastest"],
        ["fly"],
    ],
)
def test_bad_arguments_are_one_line(argv, capsys):
    assert cli.main(argv) == EXIT_USER_ERROR
    assert "--help" in one_line(capsys)


# ------------------------------------------------------------------------- data loss
def test_force_never_replaces_the_current_folder(tmp_path, monkeypatch, capsys, no_training):
    cfg = write_config(tmp_path)
    (tmp_path / "thesis.tex").write_text("years of work")
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    for out in (".", str(tmp_path), ".."):
        assert cli.main(["run", str(cfg), "-o", out, "--force"]) == EXIT_USER_ERROR
        assert "current folder or contains it" in one_line(capsys)
    assert listing(tmp_path) == before and (tmp_path / "thesis.tex").read_text() == "years of work"


def test_force_never_replaces_a_file(tmp_path, capsys, no_training):
    cfg = write_config(tmp_path)
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    assert cli.main(["run", str(cfg), "-o", str(target), "--force"]) == EXIT_USER_ERROR
    assert "is a file, not a folder" in one_line(capsys)
    assert target.read_text() == "mine" and listing(tmp_path) == ["c.yaml", "notes.txt"]


def test_force_never_replaces_a_folder_edgebnn_did_not_write(tmp_path, capsys, no_training):
    cfg = write_config(tmp_path)
    target = tmp_path / "photos"
    target.mkdir()
    (target / "cat.jpg").write_text("meow")
    assert cli.main(["run", str(cfg), "-o", str(target), "--force"]) == EXIT_USER_ERROR
    assert "was not written by edgebnn" in one_line(capsys)
    assert listing(target) == ["cat.jpg"]


def test_force_never_follows_a_symbolic_link(tmp_path, capsys, no_training):
    cfg = write_config(tmp_path)
    real = tmp_path / "real"
    real.mkdir()
    (real / "data.csv").write_text("1,2")
    (tmp_path / "link").symlink_to(real)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "link"), "--force"]) == EXIT_USER_ERROR
    assert "symbolic link" in one_line(capsys)
    assert listing(real) == ["data.csv"]


def test_force_replaces_only_what_edgebnn_wrote(tmp_path):
    from edgebnn.outputs import MARKER, OutputExistsError, staged_dir

    out = tmp_path / "run"
    with staged_dir(out, what="run folder", marked_only=True) as work:
        (work / "a.txt").write_text("first")
    assert listing(out) == [MARKER, "a.txt"]
    with pytest.raises(OutputExistsError, match="already exists.*--force"), staged_dir(out, what="run folder", marked_only=True):
        pass
    with staged_dir(out, force=True, what="run folder", marked_only=True) as work:
        (work / "b.txt").write_text("second")
    assert listing(out) == [MARKER, "b.txt"] and listing(tmp_path) == ["run"]
    (out / MARKER).unlink()
    with (
        pytest.raises(OutputExistsError, match="not written by edgebnn"),
        staged_dir(out, force=True, what="run folder", marked_only=True),
    ):
        pass
    assert listing(out) == ["b.txt"]


# ------------------------------------------------------------------- config values
@pytest.mark.parametrize(
    "section, key, value, says",
    [
        ("train", "batch_size", 0, "'train.batch_size' must be at least 1"),
        ("train", "seed", -1, "'train.seed' must be an integer from 0 to 4294967295"),
        ("train", "seed", 2**40, "'train.seed' must be an integer from 0"),
        ("data", "seed", -3, "'data.seed' must be an integer from 0"),
        ("data", "test_fraction", 1.5, "'data.test_fraction' must be a fraction between 0 and 1"),
        ("data", "test_fraction", 0, "'data.test_fraction' must be a fraction between 0 and 1"),
        ("data", "test_fraction", 0.001, "c.yaml: key 'data': test_fraction 0.001 splits the 1797 digits samples"),
        ("data", "dataset", "imagenet", "'data.dataset' is 'imagenet'; use one of digits, npz, csv"),
        ("train", "epochs", -1, "'train.epochs' must be at least 1, got -1"),
        ("train", "epochs", 0, "'train.epochs' must be at least 1, got 0"),
        ("train", "learning_rate", -0.01, "'train.learning_rate' must be a positive finite number"),
        ("train", "learning_rate", 0, "'train.learning_rate' must be a positive finite number"),
        ("train", "learning_rate", float("nan"), "'train.learning_rate' must be a positive finite number"),
        ("train", "learning_rate", float("inf"), "'train.learning_rate' must be a positive finite number"),
        ("train", "learning_rate_decay", 95, "'train.learning_rate_decay' must be a factor in (0, 1]"),
        ("train", "optimizer", "adamw", "'train.optimizer' is 'adamw'; use one of adam, sgd, rmsprop, bop"),
        ("export", "reuse_factor", 0, "'export.reuse_factor' must be an integer >= 1"),
        ("export", "backend", "Quartus", "'export.backend' is 'Quartus'; use one of Vitis, Vivado"),
        ("export", "io_type", "io_serial", "'export.io_type' is 'io_serial'; use one of io_parallel, io_stream"),
        ("export", "strategy", "Fastest", "'export.strategy' is 'Fastest'; use one of Latency, Resource"),
        ("export", "clock_period_ns", 0, "'export.clock_period_ns' must be a positive number of ns"),
        ("export", "clock_period_ns", -5, "'export.clock_period_ns' must be a positive number of ns"),
        (
            "export",
            "reuse_factor",
            {"quant_dense_1": 4, "dense9": 2},
            "c.yaml: key 'export.reuse_factor' names 'dense9', which is not a weighted layer of the model; its "
            "weighted layers are quant_dense, quant_dense_1, quant_dense_2 (give a layer a name: to choose it)",
        ),
        ("export", "reuse_factor", {"quant_dense": 0}, "'export.reuse_factor' must be an integer >= 1, or a mapping"),
        ("export", "reuse_factor", [4], "'export.reuse_factor' must be an integer or a mapping of layer names to integers"),
        (
            "export",
            "reuse_factor",
            7,
            "c.yaml: key 'export.reuse_factor': reuse factor 7 of node 'quant_dense' (dense, 64 x 128 weights) is not "
            "one hls4ml's Resource strategy builds as given; use one of 1, 2, 4, 8, 16, 32, 64, 128, 256, ",
        ),
        ("export", "part", "", "c.yaml: export: FPGA part must be a non-empty string like 'xc7z020clg400-1', got ''"),
        (None, "name", "runs/evil", "key 'name' must be an identifier"),
        (None, "name", "my model", "key 'name' must be an identifier"),
        (None, "name", "modèle", "key 'name' must be an identifier"),
        (None, "name", "", "key 'name' must be an identifier"),
        (None, "name", "9lives", "key 'name' must be an identifier"),
        (None, "board", "zedboard9000", "unknown board 'zedboard9000'"),
    ],
)
def test_values_out_of_range_are_refused_before_anything_runs(tmp_path, capsys, no_training, section, key, value, says):
    config = base_config()
    (config if section is None else config[section])[key] = value
    cfg = write_config(tmp_path, config)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == EXIT_USER_ERROR
    assert says in one_line(capsys)
    assert listing(tmp_path) == ["c.yaml"]


def test_export_option_letter_case_is_free(tmp_path):
    from edgebnn.config import check_export

    export = {"backend": "vitis", "io_type": "IO_STREAM", "strategy": "resource"}
    check_export(export)
    assert export == {"backend": "Vitis", "io_type": "io_stream", "strategy": "Resource"}


def test_api_refuses_the_same_values():
    from edgebnn.config import ConfigError
    from edgebnn.data import DataError, load_dataset
    from edgebnn.train import train

    with pytest.raises(DataError, match="unknown dataset 'mnist'"):
        load_dataset("mnist")
    with pytest.raises(DataError, match="test_fraction"):
        load_dataset("digits", test_fraction=1.0)
    for kwargs, says in (
        ({"epochs": 0}, "epochs must be at least 1"),
        ({"learning_rate": -1.0}, "learning_rate must be a positive"),
        ({"batch_size": 0}, "batch_size must be at least 1"),
        ({"optimizer": "adamw"}, "optimizer must be one of"),
    ):
        with pytest.raises(ConfigError, match=says):
            train(None, None, None, **kwargs)  # refused before the model is touched


# ------------------------------------------------------------------- config files
@pytest.mark.parametrize(
    "content, says",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is not a UTF-8 text file"),
        ("name: mod\xe8le\n".encode("latin-1"), "is not a UTF-8 text file"),
        (b"model: []\x00\n", "line 1: character #x0000 is not allowed in YAML; is this a text file?"),
        (b"", "the top level must be a mapping"),
        (b"- just\n- a list\n", "the top level must be a mapping"),
        (b"model: [\n", "line 2: not valid YAML"),
        (b"train:\n  epochs: 3\n  epochs: 5\nmodel: []\n", "line 3: key 'epochs' is given twice (first on line 2)"),
        (b"model: []\nmodel: []\n", "line 2: key 'model' is given twice (first on line 1)"),
        (
            b"model: !!python/object/apply:os.system ['true']\n",
            "refused Python tag !!python/object/apply:os.system; configs are plain data and cannot run code",
        ),
        (b"model: !include other.yaml\n", "unknown YAML tag !include"),
    ],
)
def test_bad_config_files(tmp_path, capsys, no_training, content, says):
    cfg = write_config(tmp_path, text=content)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == EXIT_USER_ERROR
    line = one_line(capsys)
    assert says in line and str(cfg) in line
    assert listing(tmp_path) == ["c.yaml"]


def test_python_tag_runs_nothing(tmp_path, capsys):
    witness = tmp_path / "pwned"
    cfg = write_config(tmp_path, text=f"model: !!python/object/apply:os.system ['touch {witness}']\n")
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == EXIT_USER_ERROR
    assert "cannot run code" in one_line(capsys)
    assert not witness.exists()


def test_merge_keys_are_not_duplicates(tmp_path):
    from edgebnn.config import load_config

    cfg = write_config(
        tmp_path, text="model:\n  - QuantDense: {units: 3}\ntrain:\n  <<: {epochs: 2, batch_size: 8}\n  epochs: 4\n"
    )
    assert load_config(cfg)["train"]["epochs"] == 4


@pytest.mark.parametrize("kind", ["folder", "missing"])
def test_config_path_that_is_not_a_file(tmp_path, capsys, kind):
    cfg = tmp_path / "cfg"
    if kind == "folder":
        cfg.mkdir()
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == EXIT_USER_ERROR
    line = one_line(capsys)
    assert f"cannot read config {str(cfg)!r}" in line
    assert ("not a folder" if kind == "folder" else "No such file") in line
    assert listing(tmp_path) == (["cfg"] if kind == "folder" else [])


# ------------------------------------------------------------------- file system
def test_read_only_parent_is_refused_before_training(tmp_path, monkeypatch, capsys, no_training):
    cfg = write_config(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    # root may write anywhere, so pretend: os.access is what check_output asks
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(locked) else real_access(p, mode))
    assert cli.main(["run", str(cfg), "-o", str(locked / "sub" / "out")]) == EXIT_USER_ERROR
    assert f"no permission to write in {str(locked)!r}" in one_line(capsys)
    assert listing(locked) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_parent_for_real(tmp_path, capsys, no_training):
    cfg = write_config(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert cli.main(["run", str(cfg), "-o", str(locked / "out")]) == EXIT_USER_ERROR
        assert "no permission to write" in one_line(capsys)
    finally:
        locked.chmod(0o755)


def test_staging_folder_that_cannot_be_made(tmp_path, monkeypatch):
    import tempfile

    from edgebnn.errors import OutputError
    from edgebnn.outputs import staged_dir

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    with (
        pytest.raises(OutputError, match=r"cannot create run folder .*new.*Permission denied; choose a folder"),
        staged_dir(tmp_path / "new" / "deeper" / "out", what="run folder"),
    ):
        pass
    assert listing(tmp_path) == []  # the parents it made are gone too


def test_full_disk_during_a_run(tmp_path, monkeypatch, capsys):
    import keras

    cfg = write_config(tmp_path)
    train_module = importlib.import_module("edgebnn.train")
    monkeypatch.setattr(train_module, "train", lambda *args, **kwargs: None)

    def full(self, path, *args, **kwargs):
        with open(path, "wb") as fh:
            fh.write(b"half a model")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(keras.Model, "save", full)
    out = tmp_path / "runs" / "out"
    assert cli.main(["run", str(cfg), "-o", str(out)]) == EXIT_USER_ERROR
    line = one_line(capsys)
    assert f"cannot write run folder {str(out)!r}: No space left on device; free some space" in line
    assert listing(tmp_path) == ["c.yaml"]


def test_full_disk_when_saving_a_graph(tmp_path, monkeypatch):
    from graphs import binary_mlp

    from edgebnn.graph import GraphError

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(np, "savez_compressed", full)
    with pytest.raises(GraphError, match="cannot write graph file .*No space left on device"):
        binary_mlp(sizes=(4, 3, 2), seed=3).save(tmp_path / "graph.npz")
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    "plot, says",
    [
        ("missing/u.svg", "does not exist; create it"),
        (".", "is a folder; name an .svg file"),
    ],
)
def test_bad_plot_path_is_refused_before_the_work(tmp_path, graph_file, capsys, plot, says):
    plot = str(tmp_path / plot)
    assert cli.main(["estimate", str(graph_file), "--plot", plot]) == EXIT_USER_ERROR
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing estimated, nothing printed
    assert len(captured.err.splitlines()) == 1 and says in captured.err
    assert listing(tmp_path) == ["graph.npz"]


def test_full_disk_while_writing_the_plot(tmp_path, graph_file, monkeypatch, capsys):
    real_replace = os.replace

    def full(src, dst):
        if str(dst).endswith(".svg"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", full)
    assert cli.main(["estimate", str(graph_file), "--plot", str(tmp_path / "u.svg")]) == EXIT_USER_ERROR
    assert "cannot write plot file" in capsys.readouterr().err
    assert listing(tmp_path) == ["graph.npz"]


# ------------------------------------------------------------------- graph files
def rewrite_graph(path, edit):
    """Rewrite a saved graph with ``edit(arrays, header)`` applied and a valid checksum, as a
    careful forger would: only the structural checks stand in the way."""
    from edgebnn.graph import _graph_checksum

    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    header = json.loads(arrays.pop("__header__").tobytes())
    arrays.pop("__checksum__")
    edit(arrays, header)
    header_bytes = json.dumps(header).encode()
    arrays["__checksum__"] = np.frombuffer(_graph_checksum(header_bytes, arrays).encode(), dtype=np.uint8)
    arrays["__header__"] = np.frombuffer(header_bytes, dtype=np.uint8)
    np.savez_compressed(path, **arrays)


def save_pickled_npy(path):
    """A .npy file holding a pickled object, under the graph's name."""
    with open(path, "wb") as fh:
        np.save(fh, np.array([{"x": 1}], dtype=object), allow_pickle=True)


def flip_compressed_byte(path):
    """Damage one byte inside the compressed weights of a saved graph, as a bad disk would."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("n1/weight.npy")
    blob = bytearray(path.read_bytes())
    name_len, extra_len = (
        int.from_bytes(blob[info.header_offset + 26 : info.header_offset + 28], "little"),
        int.from_bytes(blob[info.header_offset + 28 : info.header_offset + 30], "little"),
    )
    start = info.header_offset + 30 + name_len + extra_len
    blob[start + info.compress_size // 2] ^= 0xFF
    path.write_bytes(bytes(blob))


def flip_weight(path):
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["n1/weight"].flat[0] *= -1
    np.savez_compressed(path, **arrays)


def test_graph_round_trip_keeps_every_array(graph_file):
    from graphs import binary_mlp

    from edgebnn.graph import Graph

    original, loaded = binary_mlp(sizes=(4, 3, 2), seed=3), Graph.load(graph_file)
    for a, b in zip(original.nodes, loaded.nodes):
        assert a.params.keys() == b.params.keys()
        for key in a.params:
            assert np.array_equal(a.params[key], b.params[key]) and np.asarray(a.params[key]).dtype == b.params[key].dtype


@pytest.mark.parametrize(
    "damage, says",
    [
        (lambda p: p.write_bytes(b""), "is empty; freeze the model again"),
        (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "is truncated or corrupt"),
        (lambda p: p.write_bytes(p.read_bytes()[:-20]), "is truncated or corrupt"),
        (lambda p: flip_compressed_byte(p), "is truncated or corrupt"),
        (lambda p: p.write_text("layer1: 0.5, 0.25\n"), "is not an edgebnn graph (not a NumPy .npz archive)"),
        (lambda p: save_pickled_npy(p), "is not an edgebnn graph (not a NumPy .npz archive)"),
        (lambda p: np.savez(p, weights=np.zeros(3)), "is not an edgebnn graph (it has no header)"),
        (lambda p: np.savez(p, __header__=np.array([{"x": 1}], dtype=object)), "is truncated or corrupt"),
        (flip_weight, "is corrupt or was edited (checksum mismatch); freeze the model again"),
        (lambda p: rewrite_graph(p, lambda a, h: h.update(version=1)), "has format version 1"),
        (
            lambda p: rewrite_graph(p, lambda a, h: a.update({"n1/weight": a["n1/weight"].astype(np.float32)})),
            "array 'weight' is <f4",
        ),
        (lambda p: rewrite_graph(p, lambda a, h: a.update({"n1/weight": a["n1/weight"][:1]})), "array 'weight' is"),
        (lambda p: rewrite_graph(p, lambda a, h: h["nodes"][1].update(op="conv9d")), "unknown op"),
        (lambda p: rewrite_graph(p, lambda a, h: h["nodes"][1].update(type="fixed<8")), "is malformed"),
        (lambda p: rewrite_graph(p, lambda a, h: h["nodes"][1].pop("inputs")), "is malformed (KeyError"),
        (lambda p: rewrite_graph(p, lambda a, h: a.update({"extra": np.zeros(2)})), "holds arrays its header does not list"),
    ],
)
def test_damaged_graph_files(tmp_path, graph_file, capsys, damage, says):
    from edgebnn.graph import Graph, GraphError

    damage(graph_file)
    with pytest.raises(GraphError, match=re.escape(says)) as info:
        Graph.load(graph_file)
    assert "\n" not in str(info.value) and "pickle" not in str(info.value)
    assert cli.main(["estimate", str(graph_file)]) == EXIT_USER_ERROR
    line = one_line(capsys)
    assert says in line and str(graph_file) in line and "pickle" not in line


def test_graph_validation_errors_are_one_line_graph_errors(graph_file):
    from edgebnn.graph import Graph, GraphError

    def off_type(arrays, header):
        for i, node in enumerate(header["nodes"]):
            if node["op"] == "threshold":
                arrays[f"n{i}/thresholds"] = np.full_like(arrays[f"n{i}/thresholds"], 10**9)
                return
        raise AssertionError("no threshold node")

    rewrite_graph(graph_file, off_type)
    with pytest.raises(
        GraphError,
        match=r"^graph file .*: graph node .* thresholds do not fit the input type .*; "
        r"freeze the model again",
    ):
        Graph.load(graph_file)


@pytest.mark.parametrize("what", ["missing", "folder without graph"])
def test_estimate_of_a_missing_graph(tmp_path, capsys, what):
    path = tmp_path / "nothing.npz" if what == "missing" else tmp_path
    assert cli.main(["estimate", str(path)]) == EXIT_USER_ERROR
    assert "No such file or directory; check the path" in one_line(capsys)


def test_estimate_that_fits_nowhere_is_a_report(tmp_path, graph_file, capsys):
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(
        "name: tiny\npart: xc7z007sclg225-1\nfamily: zynq-7000\nlut: 1\nff: 1\ndsp: 0\n"
        "dsp_type: DSP48E1\nbram18: 0\nuram: 0\nclock_period_ns: 10\nsource: a test\n"
    )
    assert cli.main(["estimate", str(graph_file), "--board", str(tiny)]) == EXIT_OK
    assert "fits: no" in capsys.readouterr().out


# --------------------------------------------------------------- checks before training
def test_missing_compiler_is_refused_before_training(tmp_path, monkeypatch, capsys, no_training):
    import shutil

    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "g++" else real_which(name, *a, **k))
    cfg = write_config(tmp_path)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == EXIT_USER_ERROR
    assert one_line(capsys).startswith("edgebnn: error: g++ was not found on PATH; install it (e.g. 'apt-get install g++'")
    assert listing(tmp_path) == ["c.yaml"]


@pytest.mark.parametrize("folder", ['say"cheese', "back\\slash"])
def test_output_path_the_c_simulation_cannot_build_in_is_refused_before_training(tmp_path, capsys, no_training, folder):
    cfg = write_config(tmp_path)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / folder)]) == EXIT_USER_ERROR
    assert "hls4ml's C-simulation build cannot handle; choose a folder path without it" in one_line(capsys)
    assert listing(tmp_path) == ["c.yaml"]


def test_undeployable_structure_is_refused_before_training(tmp_path, capsys, no_training):
    config = base_config()
    # a softmax before the last layer (a final one is stripped at freeze)
    config["model"].insert(len(config["model"]) - 1, {"Activation": {"activation": "softmax", "name": "probs"}})
    cfg = write_config(tmp_path, config)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == EXIT_USER_ERROR
    assert "'probs' (Activation)" in one_line(capsys)
    assert listing(tmp_path) == ["c.yaml"]


def test_a_structure_the_io_type_cannot_export_is_refused_before_training(tmp_path, capsys, no_training):
    """A Reshape of a flattened tensor in io_stream (hls4ml holds it as pixel packets) is found
    on the untrained model, before an epoch is spent."""
    conv = {"filters": 2, "kernel_size": 3, "padding": "same", "kernel_quantizer": "ste_sign", "use_bias": False}
    config = base_config()
    config["data"]["shape"] = [8, 8, 1]
    config["model"] = [
        {"QuantConv2D": {**conv, "input_quantizer": "quantized_bits(5, 0, keep_negative=False)"}},
        {"QuantActivation": {"quantizer": "ste_sign"}},
        {"Flatten": {}},
        {"Reshape": {"target_shape": [16, 8, 1], "name": "view"}},
        {"Flatten": {}},
        {"QuantDense": {"units": 10, "input_quantizer": "ste_sign", "kernel_quantizer": "ste_sign", "use_bias": False}},
    ]
    config["export"] = {"io_type": "io_stream"}
    cfg = write_config(tmp_path, config)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == EXIT_USER_ERROR
    line = one_line(capsys)
    assert "the model cannot be exported in io_stream (checked before training)" in line, line
    assert "graph node 'view' (reshape) reshapes the flattened tensor of" in line, line
    assert listing(tmp_path) == ["c.yaml"]


def test_bad_layer_argument_is_refused_before_training(tmp_path, capsys, no_training):
    config = base_config()
    config["model"][0]["QuantDense"]["units"] = -4
    cfg = write_config(tmp_path, config)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == EXIT_USER_ERROR
    assert "model[0].QuantDense" in one_line(capsys)
    assert listing(tmp_path) == ["c.yaml"]


# ------------------------------------------------------------------ internal errors
def test_internal_error_is_one_line_with_its_own_code(monkeypatch, capsys):
    boards = importlib.import_module("edgebnn.boards")

    def broken():
        raise RuntimeError("the flux capacitor\nis empty")

    monkeypatch.setattr(boards, "list_boards", broken)
    monkeypatch.delenv("EDGEBNN_DEBUG", raising=False)
    assert cli.main(["boards"]) == EXIT_INTERNAL_ERROR
    assert one_line(capsys) == (
        "edgebnn: internal error: RuntimeError: the flux capacitor is empty "
        "(please report it; set EDGEBNN_DEBUG=1 for the traceback)"
    )
    monkeypatch.setenv("EDGEBNN_DEBUG", "1")
    assert cli.main(["boards"]) == EXIT_INTERNAL_ERROR
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.splitlines()[-1].startswith("edgebnn: internal error: RuntimeError")


@pytest.mark.parametrize(
    "summary, code",
    [
        ({"mismatches": {"a": 0, "b": 0}, "resources": {"fits": True}}, EXIT_OK),
        ({"mismatches": {"a": 0, "b": 0}, "resources": {"fits": False}}, EXIT_DOES_NOT_FIT),
        ({"mismatches": {"a": 3, "b": 0}, "resources": {"fits": True}}, EXIT_MISMATCH),
        ({"mismatches": {"a": 0, "b": 1}, "resources": {"fits": False}}, EXIT_MISMATCH),  # a mismatch wins
    ],
)
def test_run_exit_code(monkeypatch, tmp_path, summary, code):
    pipeline = importlib.import_module("edgebnn.pipeline")
    monkeypatch.setattr(pipeline, "run", lambda *args, **kwargs: summary)
    cfg = write_config(tmp_path)  # checked before the run starts: it must exist, and the output must not
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == code


# ------------------------------------------------------------ interrupts and signals
def test_interrupt_before_the_command_runs(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["boards"]) == EXIT_INTERRUPTED
    assert one_line(capsys) == "edgebnn: interrupted; nothing was left half-written"


def test_a_signal_changed_on_its_way_through_c_code_still_ends_as_the_signal(monkeypatch, capsys):
    """TensorFlow's C code can turn the exception a SIGTERM raises into another (a SystemError
    "returned a result with an exception set", seen once in a parallel run): the command still
    ends as terminated, in one line, not as an internal error."""

    def boards(args):
        try:
            cli._on_signal(signal.SIGTERM, None)
        except cli.Terminated:
            raise SystemError("<built-in function __import__> returned a result with an exception set") from None

    monkeypatch.setattr(cli, "cmd_boards", boards)
    assert cli.main(["boards"]) == EXIT_TERMINATED
    assert one_line(capsys) == "edgebnn: terminated (SIGTERM); nothing was left half-written"
    assert cli.main(["boards", "--help"]) == 0  # the next command starts afresh
    capsys.readouterr()


def test_sigterm_in_process_unwinds_like_ctrl_c(tmp_path, monkeypatch, capsys):
    train_module = importlib.import_module("edgebnn.train")

    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
        raise AssertionError("SIGTERM was not handled")

    monkeypatch.setattr(train_module, "train", terminated)
    cfg = write_config(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["run", str(cfg), "-o", str(tmp_path / "out")]) == EXIT_TERMINATED
    assert one_line(capsys) == "edgebnn: terminated (SIGTERM); nothing was left half-written"
    assert listing(tmp_path) == ["c.yaml"]
    assert signal.getsignal(signal.SIGTERM) is before  # main puts the handler back


def start(args, tmp_path):
    """edgebnn in a child process as a shell starts a foreground command: with Ctrl-C's default
    action (a test suite started in the background ignores SIGINT, which a child would inherit,
    and edgebnn, like any command, then leaves Ctrl-C ignored)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.Popen(
        [sys.executable, "-m", "edgebnn", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_closed_output_pipe(tmp_path):
    proc = start(["boards"], tmp_path)
    proc.stdout.close()  # like `edgebnn boards | head -0`
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE  # 128 + SIGPIPE, quietly, as Unix tools end in a pipe
    assert err == ""


@pytest.mark.parametrize("after", [1.0, 3.0])
def test_ctrl_c_during_start_up(tmp_path, after):
    cfg = write_config(tmp_path)
    proc = start(["run", str(cfg), "-o", "out"], tmp_path)
    # inside `import edgebnn` or the command's own imports (TensorFlow takes seconds to import,
    # and may swallow a KeyboardInterrupt raised inside its extension modules)
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED
    assert len(err.splitlines()) == 1 and err.startswith("edgebnn: interrupted"), err
    assert listing(tmp_path) == ["c.yaml"]


def test_sigterm_during_training_keeps_the_last_checkpoint(tmp_path):
    """SIGTERM while a run trains: the checkpoints written so far stay complete, the one line says
    after which epoch and how to resume, and nothing half-written is left in the run folder."""
    config = base_config()
    config["train"]["epochs"] = 200
    cfg = write_config(tmp_path, config)
    proc = start(["run", str(cfg), "-o", "out"], tmp_path)
    deadline = time.time() + 120
    state = tmp_path / "out" / "checkpoints" / "state.json"
    while not state.is_file():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_TERMINATED, err
    (line,) = err.splitlines()
    m = re.fullmatch(
        r"edgebnn: terminated \(SIGTERM\) after epoch (\d+) of 200; the last checkpoint is kept: "
        r"resume with `edgebnn run (.+) -o (.+) --resume`",  # the whole run's command, as it was started
        line,
    )
    assert m, line
    assert m.group(2) == str(cfg) and m.group(3) == str(tmp_path / "out")
    assert json.loads(state.read_text())["epoch"] == int(m.group(1))
    assert listing(tmp_path) == ["c.yaml", "out"]
    left = [p.name for p in (tmp_path / "out").rglob("*") if ".partial-" in p.name or ".tmp-" in p.name]
    assert left == []
    assert "model.keras" not in listing(tmp_path / "out")  # training did not finish: no trained model yet


# -------------------------------------------------------------- verified, but too big
@pytest.mark.train
@pytest.mark.csim
@pytest.mark.slow  # a whole run with its C-simulation
def test_design_that_does_not_fit_says_so_and_exits_3(tmp_path, capsys):
    small = tmp_path / "small.yaml"  # a board with a hundredth of the PYNQ-Z2's fabric
    small.write_text(
        "name: small\npart: xc7z020clg400-1\nfamily: zynq-7000\nlut: 532\nff: 1064\ndsp: 2\n"
        "dsp_type: DSP48E1\nbram18: 3\nuram: 0\nclock_period_ns: 10\nsource: a test\n"
    )
    config = base_config()
    config["board"] = str(small)
    for layer in config["model"][:3]:  # 64 -> 16 -> 16 -> 10: a short build, still too big for it
        if "QuantDense" in layer and layer["QuantDense"]["units"] == 128:
            layer["QuantDense"]["units"] = 16
    cfg = write_config(tmp_path, config)
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "-o", str(out)]) == EXIT_DOES_NOT_FIT
    stdout = capsys.readouterr().out
    assert re.search(r"VERIFIED bit for bit, but DOES NOT FIT small \([A-Z0-9]+ \d+% of the device, limit 80%\)", stdout), stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resources"]["fits"] is False and not any(summary["mismatches"].values())
    assert f"next step             `edgebnn estimate {out} --fit`" in stdout  # what to do about it


def test_headline_says_whether_it_fits():
    from types import SimpleNamespace

    from edgebnn.pipeline import headline

    Est = SimpleNamespace(fits=False, utilization={"lut": 13404.2, "ff": 50.0, "dsp": 0.0, "bram18": 3.0}, utilization_limit=0.8)

    ok = {"mismatches": {"a": 0}, "board": "pynq-z2"}
    bad = {"mismatches": {"a": 2}, "board": "pynq-z2"}
    assert headline(ok, Est) == "VERIFIED bit for bit, but DOES NOT FIT pynq-z2 (LUT 13404% of the device, limit 80%)"
    assert headline(bad, Est).startswith("MISMATCH (not bit-exact); it DOES NOT FIT pynq-z2")
    Est.fits = True
    assert headline(ok, Est) == "VERIFIED bit for bit, and fits pynq-z2"


# ------------------------------------------------------------------------ security
def test_nothing_in_the_package_runs_user_data_as_code():
    """Configs and graph files are data: no pickle, no eval, no shell built from strings."""
    package = os.path.join(ROOT, "edgebnn")
    forbidden = re.compile(
        r"\bimport (c?pickle|dill|cloudpickle|marshal|shelve)\b|\bpickle\.|allow_pickle\s*=\s*True|"
        r"shell\s*=\s*True|os\.system|os\.popen|\beval\(|\bexec\(|"
        r"yaml\.load\((?![^)]*StrictLoader)|yaml\.unsafe_load|safe_mode\s*=\s*False"
    )
    hits = []
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    code = line.split("#")[0]
                    if forbidden.search(code):
                        hits.append(f"{name}:{n}: {line.strip()}")
    assert hits == []


def test_keras_files_are_loaded_in_safe_mode():
    import pathlib

    calls = 0
    for path in sorted(pathlib.Path(ROOT, "edgebnn").rglob("*.py")):
        for call in re.findall(r"saving\.load_model\([^)]*\)", path.read_text(encoding="utf-8")):
            assert "safe_mode=True" in call, (path.name, call)
            calls += 1
    assert calls >= 1  # edgebnn.load_model's own call, which every other load goes through


def test_graph_files_load_without_pickle(graph_file, monkeypatch):
    import pickle

    from edgebnn.graph import Graph

    def no(*args, **kwargs):
        raise AssertionError("pickle used")

    monkeypatch.setattr(pickle, "load", no)
    monkeypatch.setattr(pickle, "loads", no)
    assert Graph.load(graph_file).name
    bad = graph_file.parent / "bad.npz"
    save_pickled_npy(bad)
    with pytest.raises(EdgebnnError):
        Graph.load(bad)
