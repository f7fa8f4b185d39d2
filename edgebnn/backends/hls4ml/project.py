"""An exported hls4ml project: compile its C-simulation with g++, ``predict``, ``trace``.

Imports no hls4ml itself (the project's ``ModelGraph`` arrives from ``export``), nor
TensorFlow or Keras.
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import shutil
import tempfile
import warnings

import numpy as np

from ...errors import EdgebnnError
from ...graph import Graph


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

    def __init__(self, path: str, model, graph: Graph, warnings_: list[str], export_kwargs=None):
        self.path = path
        self.model = model
        self.graph = graph
        self.warnings = list(warnings_)
        self._export_kwargs = dict(export_kwargs or {})  # target and project_name, for trace's twin
        self.target = self._export_kwargs.get("target")
        self._compiled = False
        # hls::stream warnings the C-simulation printed (a stream destroyed with data left in
        # it: the RTL would stall there), one per stream, from every predict so far
        self.stream_warnings: list[str] = []

    def __repr__(self) -> str:
        return f"HLSProject({self.path!r}, graph={self.graph.name!r})"

    def compile(self) -> HLSProject:
        """Build the C-simulation library with g++ (hls4ml's ``build_lib.sh``) and load it.

        The project on disk is compiled as exported, in its folder ``path`` (never where it was
        staged); it is not rewritten. The weights are compiled into the library, so the loaded
        library needs nothing from the folder afterwards.
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
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                self.model._compile()  # ModelGraph.compile() would first rewrite the whole project
        except Exception as err:
            raise RuntimeError(f"could not build or load the C-simulation of {self.path!r} ({err}):\n{out.getvalue()}") from err
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
        from .exporter import export
        from .model import hls_chain, hls_names

        x = self._inputs(x)
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore", HLSExportWarning)
            twin = export(self.graph, pathlib.Path(tmp) / "trace", trace=True, **self._export_kwargs)
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

    def predict(self, x) -> np.ndarray:
        """C-simulation of a batch: ``x`` has shape (N, *input_shape), float; returns float64
        of shape (N, *output_shape). Inputs are passed to C++ as float64, so the input
        quantization happens in ``ap_fixed`` exactly as on the FPGA."""
        outp = self.graph.output
        x = self._inputs(x)
        n = x.shape[0]
        out_size = int(np.prod(outp.shape))
        if n == 0:
            return np.zeros((0, *outp.shape), dtype=np.float64)
        if not self._compiled:
            self.compile()
        flat = np.ascontiguousarray(x.reshape(n, -1))
        with _c_output() as printed:
            y = self.model.predict(flat)
        for line in printed.getvalue().splitlines():
            if "leftover data" in line and line.strip() not in self.stream_warnings:
                self.stream_warnings.append(line.strip())
        return np.asarray(y, dtype=np.float64).reshape(n, out_size).reshape((n, *outp.shape))


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
    descriptor 1, below Python's sys.stdout), as a StringIO; passed on to stdout unless it is
    only hls::stream leftover warnings, which the caller records."""
    import sys

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
    rest = [ln for ln in text.getvalue().splitlines() if ln.strip() and "leftover data" not in ln]
    if rest:
        sys.stdout.write("\n".join(rest) + "\n")
