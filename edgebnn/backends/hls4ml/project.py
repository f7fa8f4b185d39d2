"""An exported hls4ml project: compile its C-simulation with g++, ``predict``, ``trace``.

``compile()`` runs g++ only when no library of the same content exists (:mod:`.csim_cache`);
``predict()`` splits a large batch across the cores (:mod:`.csim_worker`), with the same result.
Imports no hls4ml itself (the project's ``ModelGraph`` arrives from ``export``), nor
TensorFlow or Keras.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import io
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

import numpy as np

from ...errors import EdgebnnError
from ...graph import Graph
from . import csim_cache


class HLSExportWarning(UserWarning):
    """Something the user should know about an exported project (e.g. a snapped reuse factor)."""


class HLSProject:
    """An exported hls4ml project: ``path`` on disk, C-simulation through ``predict``.

    Attributes:
        path: the project folder (holds ``build_prj.tcl`` and ``firmware/``).
        graph: the deployment graph it was exported from.
        model: the underlying ``hls4ml.model.ModelGraph``.
        warnings: messages about the export the user should read (one sentence each).
        target: the :class:`~edgebnn.backends.target.Target` it was built for.
    """

    def __init__(self, path: str, model, graph: Graph, warnings_: list[str], export_kwargs=None, export=None):
        self.path = path
        self.model = model
        self.graph = graph
        self.warnings = list(warnings_)
        self._export_kwargs = dict(export_kwargs or {})  # target and project_name, for trace's twin
        self._export = export  # the exporter's export(), which trace calls for its twin
        self.target = self._export_kwargs.get("target")
        self._compiled = False
        self.built: bool | None = None  # whether the last compile() ran g++ (False: it loaded a cached build)
        self._library: tuple[str, str] | None = None  # (path, SHA-256) of the loaded C-simulation library
        # hls::stream warnings the C-simulation printed (a stream destroyed with data left in
        # it: the RTL would stall there), one per stream, from every predict so far
        self.stream_warnings: list[str] = []

    def __repr__(self) -> str:
        return f"HLSProject({self.path!r}, graph={self.graph.name!r})"

    def compile(self, on_build: Callable[[], None] | None = None) -> HLSProject:
        """Build the C-simulation library with g++ (hls4ml's ``build_lib.sh``) and load it.

        The project on disk is compiled as exported, in its folder ``path`` (never where it was
        staged); it is not rewritten. The weights are compiled into the library, so the loaded
        library needs nothing from the folder afterwards.

        g++ runs only when no library of the same content exists: a library this folder already
        holds, recorded with its content key, is loaded again, and with ``EDGEBNN_CSIM_CACHE``
        set one built for an identical project elsewhere is copied in (:mod:`.csim_cache`).
        ``on_build`` is called just before g++ starts (not at all when a build is reused), so a
        log can say what the next seconds are for.
        """
        check_compiler()
        if not os.path.isdir(self.path):
            raise EdgebnnError(f"HLS project folder {self.path!r} no longer exists; export the graph again")
        stamp = self.model.config.get_config_value("Stamp")
        try:
            with open(os.path.join(self.path, "build_lib.sh")) as fh:
                ours = f"LIB_STAMP={stamp}\n" in fh.read()
        except OSError:
            ours = False
        if not ours:
            raise EdgebnnError(
                f"HLS project folder {self.path!r} no longer holds the project this object exported "
                "(another export replaced it or it was changed); export the graph again"
            )
        # hls4ml builds in, and loads the library from, the configured output folder
        self.model.config.config["OutputDir"] = self.path
        project_name = self.model.config.get_project_name()
        lib = csim_cache.library_path(self.path, project_name, stamp)
        try:
            key = csim_cache.content_key(self.path, project_name)
        except OSError as err:
            raise EdgebnnError(
                f"HLS project folder {self.path!r} is incomplete ({err.strerror}: {err.filename!r}); export the graph again"
            ) from None
        shared = csim_cache.shared_dir()
        sha = csim_cache.local_hit(lib, key)
        if sha is None and shared is not None:
            sha = csim_cache.fetch_shared(shared, key, lib)
            if sha is not None:
                csim_cache.record_local(lib, key, sha)
        self.built = sha is None
        if sha is not None:
            _load_library(self.model, lib)
        else:
            if on_build is not None:
                on_build()
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out), csim_cache.precompiled_headers(shared, self.path):
                    self.model._compile()  # ModelGraph.compile() would first rewrite the whole project
            except Exception as err:
                raise RuntimeError(
                    f"could not build or load the C-simulation of {self.path!r} ({err}):\n{out.getvalue()}"
                ) from err
            sha = csim_cache.library_sha256(lib)
            if sha is None:
                raise RuntimeError(f"hls4ml built the C-simulation of {self.path!r} but {str(lib)!r} cannot be read")
            csim_cache.record_local(lib, key, sha)
            if shared is not None:
                csim_cache.store_shared(shared, key, lib, sha)
        self._library = (str(lib), sha)
        self._compiled = True
        return self

    def _inputs(self, x) -> np.ndarray:
        inp = self.graph.input
        x = np.asarray(x, dtype=np.float64)
        if x.shape[1:] != tuple(inp.shape):
            raise EdgebnnError(
                f"input has shape {x.shape[1:]} per sample but graph {self.graph.name!r} expects {tuple(inp.shape)}"
            )
        if not np.all(np.isfinite(x)):
            raise EdgebnnError("cannot simulate NaN or infinite inputs; clean the input first")
        return x

    def trace(self, x) -> dict[str, np.ndarray]:
        """Every compute node's C-simulation output for inputs ``x``, by graph node name.

        Runs a traced twin of this project in a temporary folder (hls4ml compiles tracing
        code into it), so the exported project stays exactly as it is. Slow: meant for
        locating a mismatch on a few samples.
        """
        from .model import hls_chain, hls_names

        if self._export is None:
            raise EdgebnnError("this HLSProject was made without its exporter; open it with open_project() to trace it")
        x = self._inputs(x)
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore", HLSExportWarning)
            twin = self._export(self.graph, pathlib.Path(tmp) / "trace", trace=True, **self._export_kwargs)
            with contextlib.redirect_stdout(io.StringIO()):
                _, traces = twin.model.trace(np.ascontiguousarray(x.reshape(len(x), -1)))
        names = hls_names(self.graph)
        # a flatten moved behind requantizations (io_stream) holds their results, not its own
        moved = hls_chain(self.graph, self.target.io_type).moved
        return {
            node.name: np.asarray(traces[names[node.name]], dtype=np.float64).reshape((len(x), *node.shape))
            for node in self.graph.nodes
            if names[node.name] in traces and node.name not in moved
        }

    def predict(self, x, processes: int | None = None) -> np.ndarray:
        """C-simulation of a batch: ``x`` has shape (N, *input_shape), float; returns float64
        of shape (N, *output_shape). Inputs are passed to C++ as float64, so the input
        quantization happens in ``ap_fixed`` exactly as on the FPGA.

        A large batch is split into contiguous chunks simulated in parallel, one per core: this
        process runs one and fresh Python processes (:mod:`.csim_worker`, no fork) the others,
        each calling the same C function on the same float64 values, so the result is the same
        as one process's, in order. ``processes`` sets how many (1: all here); by default the
        first :data:`PROBE_SAMPLES` samples are timed here and the rest is split when it would
        take at least :data:`PARALLEL_MIN_SECONDS` in this process alone.
        """
        if processes is not None and (isinstance(processes, bool) or not isinstance(processes, int) or processes < 1):
            raise EdgebnnError(f"processes must be a positive whole number, got {processes!r}")
        outp = self.graph.output
        x = self._inputs(x)
        n = x.shape[0]
        if n == 0:
            return np.zeros((0, *outp.shape), dtype=np.float64)
        if not self._compiled:
            self.compile()
        flat = np.ascontiguousarray(x.reshape(n, -1))
        parts: list[tuple[np.ndarray, str]] = []
        if processes is None:
            start = time.perf_counter()
            parts.append(self._simulate_here(flat[:PROBE_SAMPLES]))
            per_sample = (time.perf_counter() - start) / min(n, PROBE_SAMPLES)
            flat = flat[PROBE_SAMPLES:]
            processes = _usable_cores() if per_sample * len(flat) >= PARALLEL_MIN_SECONDS else 1
        processes = min(processes, len(flat))
        if processes > 1 and self._workers_possible():
            parts += self._simulate_in_processes(flat, processes)
        elif len(flat):  # one process, or the library file is gone or changed since it was loaded
            parts.append(self._simulate_here(flat))
        for _, printed in parts:
            self._take_printed(printed)
        y = np.concatenate([part for part, _ in parts])
        return y.reshape((n, *outp.shape))

    def _workers_possible(self) -> bool:
        """Whether the library file loaded by compile() is still there as it was (workers load it)
        and this Python can start workers."""
        if self._library is None or not sys.executable:
            return False
        return csim_cache.library_sha256(pathlib.Path(self._library[0])) == self._library[1]

    def _simulate_here(self, flat: np.ndarray) -> tuple[np.ndarray, str]:
        """hls4ml's own predict on the rows of ``flat`` in this process: (outputs, what the C++
        code printed)."""
        with _c_output() as printed:
            y = self.model.predict(flat)
        return np.asarray(y, dtype=np.float64).reshape(len(flat), -1), printed.getvalue()

    def _simulate_in_processes(self, flat: np.ndarray, processes: int) -> list[tuple[np.ndarray, str]]:
        """The rows of ``flat`` in ``processes`` contiguous chunks, the first here and the others
        in worker processes at the same time; (outputs, printed) per chunk, in order."""
        chunks = np.array_split(flat, processes)
        out_size = int(np.prod(self.graph.output.shape))
        function = f"{self.model.config.get_project_name()}_double"  # float64 inputs, as _simulate_here passes them
        with concurrent.futures.ThreadPoolExecutor(max_workers=processes - 1) as pool:
            others = [pool.submit(_simulate_in_a_process, self._library[0], function, chunk, out_size) for chunk in chunks[1:]]
            first = self._simulate_here(chunks[0])
            return [first] + [job.result() for job in others]

    def _take_printed(self, printed: str) -> None:
        """Record the hls::stream leftover warnings in what the C++ code printed; pass the rest on
        to stdout."""
        rest = []
        for line in printed.splitlines():
            if "leftover data" in line:
                if line.strip() not in self.stream_warnings:
                    self.stream_warnings.append(line.strip())
            elif line.strip():
                rest.append(line)
        if rest:
            sys.stdout.write("\n".join(rest) + "\n")


# the default split of HLSProject.predict: the first PROBE_SAMPLES samples are timed in the
# calling process, and the rest is split across the cores when it would take at least
# PARALLEL_MIN_SECONDS there (a worker process starts in about 0.2 s)
PROBE_SAMPLES = 64
PARALLEL_MIN_SECONDS = 1.0


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _simulate_in_a_process(library: str, function: str, chunk: np.ndarray, out_size: int) -> tuple[np.ndarray, str]:
    """One chunk in a fresh Python process (:mod:`.csim_worker`): (outputs, printed)."""
    code = f"import sys; sys.path[:] = {sys.path!r}; from edgebnn.backends.hls4ml.csim_worker import main; main()"
    argv = [sys.executable, "-c", code, library, function, str(chunk.shape[1]), str(out_size)]
    done = subprocess.run(argv, input=np.ascontiguousarray(chunk, dtype=np.float64).tobytes(), capture_output=True, check=False)
    size = len(chunk) * out_size * 8
    if done.returncode != 0 or len(done.stdout) < size:
        raise RuntimeError(
            f"a C-simulation worker process for {len(chunk)} samples failed (exit code {done.returncode}):\n"
            + done.stderr.decode(errors="replace")
        )
    if done.stderr:
        sys.stderr.write(done.stderr.decode(errors="replace"))
    y = np.frombuffer(done.stdout[:size], dtype=np.float64).reshape(len(chunk), out_size)
    return y, done.stdout[size:].decode(errors="replace")


def _load_library(model, lib) -> None:
    """Load ``lib`` as the model's C-simulation, as hls4ml's ``ModelGraph._compile`` does after
    its build (the library loaded before is closed first)."""
    import _ctypes
    import ctypes

    if model._top_function_lib is not None:
        _ctypes.dlclose(model._top_function_lib._handle)
        model._top_function_lib = None
    model._top_function_lib = ctypes.cdll.LoadLibrary(str(lib))


def check_compiler() -> None:
    """Raise an :class:`EdgebnnError` unless g++, which builds the C-simulation, is on PATH.

    Cheap: call it before training when the run will C-simulate.
    """
    if shutil.which("g++") is None:
        raise EdgebnnError(
            "g++ was not found on PATH; install it (e.g. 'apt-get install g++' or Xcode's command "
            "line tools) to build the C-simulation, or skip the C-simulation"
        )


def _flush_c_stdio() -> None:
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def _c_output():
    """What C++ code prints to stdout in the block (the C-simulation library writes to file
    descriptor 1, below Python's sys.stdout), as a StringIO filled when the block ends."""
    text = io.StringIO()
    fd = 1  # C's stdout, whatever Python's sys.stdout is now
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stdout.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield text
        finally:
            _flush_c_stdio()
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            text.write(tmp.read().decode(errors="replace"))
