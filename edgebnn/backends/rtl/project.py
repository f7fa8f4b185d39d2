"""``RTLProject``: an exported RTL design, its Verilator simulation built once per content and
driven in batches from Python.

``predict(x)`` takes float inputs as ``HLSProject.predict`` does (quantized to the input codes
exactly as the graph's input op quantizes them), streams the whole batch through the design in
one call of the C++ harness and returns float64 outputs; ``trace(x)`` returns every node's
outputs, read from each unit's output stream; ``cycles_per_sample`` and ``latency_cycles`` are
measured in the simulation (the steady-state interval between samples leaving the design, and
the cycles from the first input beat to the first sample's last output beat).

What synthesis needs: ``path``, ``top``, ``sources`` (the Verilog files in order), ``hdl_dir``
(the folder to run tools in: the ROM files are read relative to it) and ``folding``.
"""

from __future__ import annotations

import ctypes
import json
import math
import pathlib

import numpy as np

from ...errors import EdgebnnError
from ...graph import Graph
from ...graph.ops import REGISTRY

PROJECT_FILE = "project.json"
LIBRARY = "sim/build/edgebnn_rtl_sim.so"
_I64P = ctypes.POINTER(ctypes.c_int64)


class RTLProject:
    """The RTL project in ``path`` (written by :func:`~edgebnn.backends.rtl.export`)."""

    def __init__(self, path):
        self.path = pathlib.Path(path)
        try:
            meta = json.loads((self.path / PROJECT_FILE).read_text())
        except (OSError, ValueError):
            raise EdgebnnError(
                f"'{self.path}' is not an edgebnn RTL project (no readable {PROJECT_FILE}); "
                "export one with edgebnn.backends.rtl.export"
            ) from None
        if not isinstance(meta, dict) or meta.get("format") != "edgebnn-rtl":
            raise EdgebnnError(f"'{self.path / PROJECT_FILE}' is not an edgebnn RTL project file; export the project again")
        self.meta = meta
        self.top: str = meta["top"]
        self.folding: dict[str, tuple[int, int]] = {k: tuple(v) for k, v in meta["folding"].items()}
        self.graph = Graph.load(self.path / "graph.npz")
        self._lib = None
        self.built: bool | None = None  # after compile(): True when Verilator and g++ ran, False for a cached library
        self.cycles_per_sample: float | None = None
        self.latency_cycles: int | None = None

    @property
    def sources(self) -> list[pathlib.Path]:
        """The Verilog files of the design, the top last."""
        return [self.path / s for s in self.meta["sources"]]

    @property
    def hdl_dir(self) -> pathlib.Path:
        return self.path / "hdl"

    def compile(self) -> RTLProject:
        """Build the simulation library (skipped when one of the same content exists) and load it."""
        if self._lib is not None:
            return self
        from .sim.build import build_library

        lib = self.path / LIBRARY
        harness = [self.path / "sim" / "harness.cpp", self.path / "sim" / "design.h"]
        self.built = build_library(self.path, self.sources, harness, self.top, lib)
        return self._load(lib)

    def _load(self, lib) -> RTLProject:
        """Load the simulation library ``lib`` as it is (bench/rtl_sim.py times a library an
        earlier edgebnn built this way, beside the current one)."""
        self._lib = ctypes.CDLL(str(pathlib.Path(lib).absolute()))
        run = self._lib.edgebnn_run
        run.restype = ctypes.c_int64
        run.argtypes = [
            ctypes.c_char_p,
            ctypes.c_int64,
            _I64P,
            _I64P,
            _I64P,
            _I64P,
            _I64P,
            ctypes.c_uint32,
            ctypes.c_int64,
            _I64P,
        ]
        return self

    def _codes(self, x) -> np.ndarray:
        inp = self.graph.input
        x = np.asarray(x, dtype=np.float64)
        if x.shape[1:] != tuple(inp.shape):
            raise ValueError(
                f"input has shape {x.shape[1:]} per sample but the design of graph {self.graph.name!r} expects {tuple(inp.shape)}"
            )
        return np.ascontiguousarray(REGISTRY["input"].execute(inp, [], [x]).astype(np.int64))

    def run_codes(self, codes: np.ndarray, taps: bool = False, stall_seed: int = 0) -> tuple[np.ndarray, dict | None]:
        """Stream the input ``codes`` (N, *input shape) through the simulated design; the output
        codes and, with ``taps``, every compute node's codes by name. ``stall_seed`` withholds
        input beats and output readiness pseudo-randomly (the handshakes under back-pressure)."""
        self.compile()
        g = self.graph
        n = len(codes)
        out = np.zeros((n, *g.output.shape), dtype=np.int64)
        nodes = g.compute_nodes()
        tap_buf = np.zeros(sum(n * math.prod(nd.shape) for nd in nodes) if taps else 1, dtype=np.int64)
        done = np.zeros(max(n, 1), dtype=np.int64)
        first = np.zeros(1, dtype=np.int64)
        seen = np.zeros(max(len(nodes), 1), dtype=np.int64)
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        if n == 0:
            return out, ({nd.name: np.zeros((0, *nd.shape), np.int64) for nd in nodes} if taps else None)
        worst = sum(int(v["interval"]) + 4 for v in self.meta["cycles"].values())
        max_cycles = (n + 2) * (worst + 16) * (8 if stall_seed else 2) + 1000
        ptr = lambda a: a.ctypes.data_as(_I64P)
        cycles = self._lib.edgebnn_run(
            str(self.hdl_dir.absolute()).encode(),
            n,
            ptr(codes),
            ptr(out),
            ptr(tap_buf) if taps else None,
            ptr(done),
            ptr(first),
            stall_seed,
            max_cycles,
            ptr(seen),
        )
        if cycles == -1:
            raise RuntimeError(
                f"the RTL simulation of {self.top} stopped after {max_cycles} cycles without all outputs (a deadlock)"
            )
        if cycles == -2:
            node, beats = next((nd, int(b)) for nd, b in zip(nodes, seen) if b != n * math.prod(nd.shape[:-1]))
            raise RuntimeError(
                f"the RTL simulation of {self.top}: the unit of node {node.name!r} ({node.op}) sent {beats} beats "
                f"for {n} samples, its shape {node.shape} says {n * math.prod(node.shape[:-1])}"
            )
        if cycles < 0:
            raise EdgebnnError(f"cannot enter the RTL project's folder '{self.hdl_dir}' to read its ROM files; check it exists")
        self.latency_cycles = int(done[0] - first[0] + 1)
        if n >= 3:
            steps = np.diff(done[n // 2 :]) if n >= 6 else np.diff(done[1:])
            self.cycles_per_sample = float(np.median(steps))
        elif n == 2:
            self.cycles_per_sample = float(done[1] - done[0])
        traced = None
        if taps:
            traced, at = {}, 0
            for nd in nodes:
                size = n * math.prod(nd.shape)
                traced[nd.name] = tap_buf[at : at + size].reshape(n, *nd.shape)
                at += size
        return out, traced

    def predict(self, x) -> np.ndarray:
        """The design's float64 outputs for float inputs ``x`` (batch first)."""
        out, _ = self.run_codes(self._codes(x))
        return self.graph.output.type.from_codes(out)

    def trace(self, x) -> dict[str, np.ndarray]:
        """Every node's float64 outputs (the input node's quantized inputs too), by node name, as
        ``emulate(..., return_all=True)`` returns them."""
        codes = self._codes(x)
        _, traced = self.run_codes(codes, taps=True)
        result = {self.graph.input.name: self.graph.input.type.from_codes(codes)}
        for nd in self.graph.compute_nodes():
            result[nd.name] = nd.type.from_codes(traced[nd.name])
        return result

    def measure(self, n: int = 16) -> tuple[float, int]:
        """(cycles per sample, latency in cycles) measured on ``n`` zero samples."""
        self.run_codes(self._codes(np.zeros((n, *self.graph.input.shape))))
        return self.cycles_per_sample, self.latency_cycles
