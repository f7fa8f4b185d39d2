"""Compile once: the C-simulation build cache (in the project folder and shared through
EDGEBNN_CSIM_CACHE) and the C-simulation of large batches split across processes."""

import contextlib
import os
import pathlib
import re
import subprocess
import time

import numpy as np
import pytest
from graphs import PYNQ, binary_mlp, chain, edge_inputs, export_quietly

from edgebnn.backends.hls4ml import csim_cache, exporter
from edgebnn.backends.hls4ml import project as project_module
from edgebnn.emulate import emulate
from edgebnn.errors import EdgebnnError

pytestmark = pytest.mark.csim


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """This module's own shared cache, empty at its start (not the session's)."""
    folder = tmp_path_factory.mktemp("shared-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(csim_cache.CACHE_ENV, str(folder))
        yield folder


@contextlib.contextmanager
def builds():
    """A list with one entry per run of hls4ml's build_lib.sh (the g++ build) in the block."""
    calls = []
    real = subprocess.run

    def spy(args, *a, **k):
        if args == ["./build_lib.sh"]:
            calls.append(k.get("cwd"))
        return real(args, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(subprocess, "run", spy)
        yield calls


def timed_compile(project):
    with builds() as calls:
        start = time.perf_counter()
        project.compile()
        took = time.perf_counter() - start
    return calls, took


def library(project) -> pathlib.Path:
    return pathlib.Path(project._library[0])


def key_record(project) -> str:
    lib = library(project)
    return lib.with_name(lib.name + csim_cache.KEY_SUFFIX).read_text()


def replace_with(path: pathlib.Path, data: bytes):
    """Write ``data`` as a new file at ``path`` (a library loaded from there stays mapped intact)."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@pytest.fixture(scope="module")
def mlp(cache, tmp_path_factory):
    """(graph, project, folder, x, predictions): a small MLP, built by g++ once."""
    graph = binary_mlp(sizes=(4, 3, 2), seed=3)
    folder = tmp_path_factory.mktemp("cache")
    project = export_quietly(graph, folder / "a", board=PYNQ)
    calls, _ = timed_compile(project)
    assert calls == [project.path] and project.built is True  # the spy sees the build
    x = edge_inputs(graph, 200)
    y = project.predict(x)
    assert np.array_equal(y, emulate(graph, x))
    return graph, project, folder, x, y


def test_a_second_compile_loads_the_library_the_folder_holds(mlp):
    graph, project, _, x, y = mlp
    lib = library(project)
    before = lib.stat().st_mtime_ns
    calls, took = timed_compile(project)
    assert calls == [] and took < 1.0, (calls, took)
    assert project.built is False  # what csim reports: the cached build
    assert lib.stat().st_mtime_ns == before
    assert np.array_equal(project.predict(x), y)


def test_the_key_follows_the_content_not_the_folder(mlp, monkeypatch):
    graph, project, folder, _, _ = mlp
    key = csim_cache.content_key(project.path, "myproject")
    assert f'"key": "{key}"' in key_record(project)
    same = export_quietly(graph, folder / "same", board=PYNQ)  # another folder, another stamp
    assert csim_cache.content_key(same.path, "myproject") == key
    other = export_quietly(graph, folder / "resource", board=PYNQ, strategy="Resource")
    assert csim_cache.content_key(other.path, "myproject") != key
    named = export_quietly(graph, folder / "named", board=PYNQ, project_name="net")
    assert csim_cache.content_key(named.path, "net") != key
    monkeypatch.setattr(csim_cache, "CSIM_CFLAGS", "-O2 -fPIC")
    assert csim_cache.content_key(same.path, "myproject") != key
    monkeypatch.undo()
    monkeypatch.setattr(csim_cache, "compiler_identity", lambda: b"g++ (another) 99.1")
    assert csim_cache.content_key(same.path, "myproject") != key


def test_a_project_reading_weight_files_is_keyed_by_its_folder(mlp):
    """hls4ml's WriteWeightsTxt makes the library read its weights from the folder compiled in."""
    graph, project, folder, _, _ = mlp
    keys = []
    for name in ("txt1", "txt2"):
        other = export_quietly(graph, folder / name, board=PYNQ)
        cpp = pathlib.Path(other.path, "firmware", "myproject.cpp")
        text, marker = cpp.read_text(), "// hls-fpga-machine-learning insert load weights"
        assert marker in text
        cpp.write_text(text.replace(marker, 'nnet::load_weights_from_txt<int, 1>(w, "w2.txt");'))
        keys.append(csim_cache.content_key(other.path, "myproject"))
    assert keys[0] != keys[1]


def test_a_changed_weight_is_built_again(mlp):
    graph, project, folder, x, y = mlp
    edited = export_quietly(graph, folder / "edited", board=PYNQ)
    weights = pathlib.Path(edited.path, "firmware", "weights")
    last = max(weights.glob("w*.h"), key=lambda p: int(re.sub(r"\D", "", p.name)))  # the output layer's
    text = last.read_text()
    first = re.search(r"= \{(-?1),", text)
    last.write_text(text[: first.start(1)] + ("1" if first.group(1) == "-1" else "-1") + text[first.end(1) :])
    calls, _ = timed_compile(edited)
    assert calls == [edited.path]
    assert key_record(edited) != key_record(project)
    got = edited.predict(x)
    assert not np.array_equal(got, y)


def test_an_identical_project_elsewhere_gets_the_shared_library(mlp, cache):
    graph, project, folder, x, y = mlp
    twin = export_quietly(graph, folder / "twin", board=PYNQ)
    calls, took = timed_compile(twin)
    assert calls == [] and took < 1.0 and twin.built is False, (calls, took)
    assert library(twin).parent == pathlib.Path(twin.path, "firmware") and library(twin) != library(project)
    assert library(twin).read_bytes() == library(project).read_bytes()
    assert np.array_equal(twin.predict(x), y)
    key = csim_cache.content_key(twin.path, "myproject")
    assert (cache / f"{key}.so").read_bytes() == library(twin).read_bytes()
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_corrupt_library_is_never_loaded(mlp, cache):
    graph, project, folder, x, y = mlp
    key = csim_cache.content_key(project.path, "myproject")
    entry = cache / f"{key}.so"
    good = entry.read_bytes()
    replace_with(entry, good[: len(good) // 2])  # a partial entry, its checksum still the whole one's
    third = export_quietly(graph, folder / "third", board=PYNQ)
    calls, _ = timed_compile(third)
    assert calls == [third.path]  # built again
    assert np.array_equal(third.predict(x), y)
    assert csim_cache.library_sha256(entry) == (cache / f"{key}.sha256").read_text().strip()  # and the entry repaired
    # the folder's own library truncated: not loaded, copied from the repaired shared entry
    lib = library(third)
    replace_with(lib, lib.read_bytes()[:1000])
    calls, _ = timed_compile(third)
    assert calls == [] and csim_cache.library_sha256(lib) == csim_cache.library_sha256(entry)
    assert np.array_equal(third.predict(x), y)


@pytest.mark.quick  # no compile
def test_partial_shared_entries_are_ignored(tmp_path):
    lib = tmp_path / "lib.so"
    (tmp_path / "k.so").write_bytes(b"library")
    assert csim_cache.fetch_shared(tmp_path, "k", lib) is None  # no checksum yet (written last)
    (tmp_path / "k.sha256").write_text("0" * 64)
    assert csim_cache.fetch_shared(tmp_path, "k", lib) is None and not lib.exists()
    (tmp_path / "k.sha256").write_text(csim_cache._sha256(b"library") + "\n")
    assert csim_cache.fetch_shared(tmp_path, "k", lib) == csim_cache._sha256(b"library") and lib.read_bytes() == b"library"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.sha256", "k.so", "lib.so"]  # no temporary file left


def test_an_unusable_cache_folder_is_one_sentence(mlp, tmp_path, monkeypatch):
    _, project, _, _, _ = mlp
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv(csim_cache.CACHE_ENV, str(tmp_path / "file" / "cache"))
    with pytest.raises(EdgebnnError, match=r"^EDGEBNN_CSIM_CACHE names '.*file/cache', which cannot be used .*; point it"):
        project.compile()


@pytest.mark.quick  # no compile
def test_the_session_shares_a_cache():
    """conftest points every other test module at one shared cache."""
    assert os.environ.get(csim_cache.CACHE_ENV)


@pytest.mark.quick  # no compile
def test_the_build_flags_are_the_exporters():
    assert exporter.CSIM_CFLAGS is csim_cache.CSIM_CFLAGS


def test_the_weights_build_apart_from_the_network(mlp):
    """build_lib.sh compiles the weights in a unit of their own (the library the mlp fixture built
    that way predicts as the emulator): every weight header of parameters.h is defined there
    once, and declared extern, its include guard defined, for the network."""
    _, project, _, _, _ = mlp
    root = pathlib.Path(project.path)
    headers = re.findall(r'#include "(weights/\w+\.h)"', (root / "firmware" / "parameters.h").read_text())
    assert len(headers) >= 4  # the weights, biases, thresholds and levels of the layers
    units = (root / "firmware" / "myproject_weights.cpp").read_text()
    extern = (root / "firmware" / "myproject_weights_extern.h").read_text()
    for header in headers:
        guard, name = re.search(r"#ifndef (\w+)\n#define \1\n\s*\w+ (\w+)\[", (root / "firmware" / header).read_text()).groups()
        assert f'#include "{header}"' in units and f"#define {guard}\n" in extern and f" {name}[" in extern
    # every array of this network is read as a plain int or double table and filled at load
    assert units.count("namespace { namespace values {") == len(headers)
    script = (root / "build_lib.sh").read_text()
    assert '-Og -fno-inline "${WEIGHTS_PCH[@]}" ${INCFLAGS} -c firmware/${PROJECT}_weights.cpp' in script
    assert "-include firmware/${PROJECT}_weights_extern.h" in script


def test_the_shared_cache_precompiles_the_headers_every_unit_parses(mlp, cache, tmp_path, monkeypatch):
    """With a shared cache each unit of build_lib.sh first includes a header precompiled there
    (g++ takes it: -H marks it with '!'), and the library built so (the mlp fixture's) predicts
    as one built without a shared cache, which parses the headers itself."""
    graph, project, _, x, y = mlp
    assert len(list(cache.glob("pch-*/edgebnn_csim.h.gch"))) == 2  # the network's and bridge's, the weights'
    root = pathlib.Path(project.path)
    with csim_cache.precompiled_headers(cache, root):
        network, weights = os.environ[csim_cache.PCH_ENV], os.environ[csim_cache.PCH_WEIGHTS_ENV]
    assert csim_cache.PCH_ENV not in os.environ and csim_cache.PCH_WEIGHTS_ENV not in os.environ
    flags = [*csim_cache.CSIM_CFLAGS.split(), "-Ifirmware/ap_types/", '-DWEIGHTS_DIR="w"', "-Winvalid-pch", "-H", "-fsyntax-only"]
    units = [(network, (), "firmware/myproject.cpp"), (network, (), "myproject_bridge.cpp")]
    units.append((weights, csim_cache._WEIGHTS_FLAGS, "firmware/myproject_weights.cpp"))
    for header, extra, source in units:
        done = subprocess.run(["g++", *flags, *extra, "-include", header, source], cwd=root, capture_output=True, text=True)
        assert done.returncode == 0 and done.stderr.startswith(f"! {header}.gch\n"), (source, done.stderr[:300])
    monkeypatch.delenv(csim_cache.CACHE_ENV)
    plain = export_quietly(graph, tmp_path / "plain", board=PYNQ)
    calls, _ = timed_compile(plain)
    assert calls == [plain.path] and np.array_equal(plain.predict(x), y)


@pytest.mark.quick  # no compile
def test_a_weight_table_keeps_the_type_of_its_literals():
    """The plain table an array is read as has the C++ type of every literal of its initializer
    (so each value goes through the constructor it calls in the header); mixed literals, or ints
    wider than 32 bits, keep the header's own initializer."""
    assert csim_cache._literal_type("1, -1, 0, 2147483647") == "int"
    assert csim_cache._literal_type("-8.0, -7.5, 0.00390625, 1e-05, 2.5E+3") == "double"
    assert csim_cache._literal_type("1, 0.5") is None
    assert csim_cache._literal_type("2147483648") is None
    assert csim_cache._literal_type(".5") is None


def test_weights_in_another_form_keep_one_unit(mlp):
    """A project whose weight headers hls4ml wrote otherwise (read from text files in the
    C-simulation) or whose build_lib.sh is not hls4ml's is left as it is."""
    graph, _, folder, _, _ = mlp
    project = export_quietly(graph, folder / "forms", board=PYNQ)
    root = pathlib.Path(project.path)
    script = root / "build_lib.sh"
    for name in ("myproject_weights.cpp", "myproject_weights_extern.h"):
        (root / "firmware" / name).unlink()
    split = script.read_text()
    start, end = split.index("# The weights are compiled"), split.index("rm -f *.o")
    script.write_text(split[:start] + csim_cache._COMPILE_LINES + split[end:])  # as hls4ml wrote it
    hls4ml_script = script.read_text()
    header = root / "firmware" / "weights" / "w2.h"
    text = header.read_text()
    header.write_text(
        text.replace("#define W2_H_\n", "#define W2_H_\n#ifndef __SYNTHESIS__\nint w2_txt;\n#else\n").replace(
            "#endif", "#endif\n#endif"
        )
    )
    assert csim_cache.split_weights(root, "myproject") is False
    assert script.read_text() == hls4ml_script and not (root / "firmware" / "myproject_weights.cpp").exists()
    header.write_text(text)
    script.write_text(hls4ml_script.replace("-c firmware/${PROJECT}.cpp", "-c firmware/${PROJECT}.cpp -DX"))
    assert csim_cache.split_weights(root, "myproject") is False
    script.write_text(hls4ml_script)
    assert csim_cache.split_weights(root, "myproject") is True
    assert script.read_text() == split


# ------------------------------------------------------------------ parallel C-simulation
@pytest.fixture(scope="module")
def leaky(cache, tmp_path_factory):
    """An io_stream project with convolutions (static line buffers) whose C-simulation prints
    hls::stream leftover warnings (a one-row kernel with a row stride, which export refuses)."""
    graph = chain([("conv2d", {"kernel": (1, 3), "strides": (2, 1)}), "threshold"], input_shape=(6, 4, 2))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(exporter, "check_graph", lambda graph, io_type="io_parallel": None)
        project = export_quietly(graph, tmp_path_factory.mktemp("leaky") / "prj", board=PYNQ, io_type="io_stream")
    return graph, project.compile()


@contextlib.contextmanager
def workers():
    """A list with the number of samples of each chunk simulated in a worker process in the block."""
    chunks = []
    real = project_module._simulate_in_a_process

    def spy(library, function, chunk, out_size):
        chunks.append(len(chunk))
        return real(library, function, chunk, out_size)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(project_module, "_simulate_in_a_process", spy)
        yield chunks


@pytest.mark.parametrize("which", ["mlp", "leaky"])
def test_parallel_predict_is_the_serial_one(which, request):
    graph, project = request.getfixturevalue(which)[:2]
    x = edge_inputs(graph, 403)
    serial = project.predict(x, processes=1)
    warned = list(project.stream_warnings)
    assert (len(warned) > 0) == (which == "leaky")
    for processes in (2, 3):
        with workers() as chunks:
            got = project.predict(x, processes=processes)
        assert chunks == [len(c) for c in np.array_split(x, processes)][1:]  # the first chunk runs here
        assert got.dtype == serial.dtype and np.array_equal(got, serial)
    assert project.stream_warnings == warned
    if which == "mlp":
        assert np.array_equal(serial, emulate(graph, x))


def test_the_default_splits_a_slow_batch(mlp, monkeypatch):
    graph, project, _, _, _ = mlp
    x = edge_inputs(graph, 400)
    monkeypatch.setattr(project_module, "PARALLEL_MIN_SECONDS", 0.0)
    monkeypatch.setattr(project_module, "_usable_cores", lambda: 2)
    with workers() as chunks:
        got = project.predict(x)
    rest = len(x) - project_module.PROBE_SAMPLES
    assert chunks == [rest - rest // 2]
    assert np.array_equal(got, project.predict(x, processes=1))
    monkeypatch.setattr(project_module, "PARALLEL_MIN_SECONDS", 1e9)  # a fast batch stays here
    with workers() as chunks:
        project.predict(x)
    assert chunks == []


def test_workers_report_what_the_simulation_prints(leaky):
    graph, project = leaky
    x = edge_inputs(graph, 8)
    flat = np.ascontiguousarray(x.reshape(len(x), -1))
    out_size = int(np.prod(graph.output.shape))
    y, printed = project_module._simulate_in_a_process(str(library(project)), "myproject_double", flat, out_size)
    assert "leftover data" in printed
    assert np.array_equal(y.reshape((len(x), *graph.output.shape)), project.predict(x, processes=1))


def test_without_its_library_file_predict_stays_in_one_process(mlp):
    graph, project, _, x, y = mlp
    lib = library(project)
    moved = lib.with_name("moved.so")
    os.rename(lib, moved)
    try:
        with workers() as chunks:
            got = project.predict(x, processes=2)
    finally:
        os.rename(moved, lib)
    assert chunks == [] and np.array_equal(got, y)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_processes_must_be_a_positive_whole_number(mlp, bad):
    _, project, _, x, _ = mlp
    with pytest.raises(EdgebnnError, match=r"^processes must be a positive whole number"):
        project.predict(x, processes=bad)
