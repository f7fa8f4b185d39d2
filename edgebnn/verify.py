"""Prove Keras = emulator = C-simulation (= RTL simulation), bit for bit, and say where they part ways."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .emulate import emulate
from .graph import Graph


@dataclasses.dataclass
class Mismatch:
    between: str  # "keras/emulator", "emulator/csim" or "emulator/rtl"
    sample: int
    layer: str  # graph node where the two first differ
    source: str  # the Keras layer(s) that node was frozen from
    expected: list
    got: list

    def describe(self) -> str:
        return (
            f"{self.between}: sample {self.sample} first differs at node {self.layer!r} "
            f"(from {self.source}): {self.expected} vs {self.got}"
        )


@dataclasses.dataclass
class VerifyReport:
    samples: int
    keras_vs_emulator: int | None
    emulator_vs_csim: int | None
    first_mismatches: list[Mismatch]
    outputs: dict[str, np.ndarray]
    # where freeze recorded that Keras's own float32 result is not unique (graph.meta):
    # mismatches there are Keras disagreeing with itself across layouts, said, never silent
    caveats: list[dict] = dataclasses.field(default_factory=list)
    # hls::stream data the C-simulation left unread: on the FPGA that stream stalls or feeds the
    # next frame, so the design is wrong even where these outputs agree
    stream_leftovers: list[str] = dataclasses.field(default_factory=list)
    # the RTL design's Verilator simulation against the emulator (None: not run)
    emulator_vs_rtl: int | None = None

    @property
    def ok(self) -> bool:
        return not self.keras_vs_emulator and not self.emulator_vs_csim and not self.stream_leftovers and not self.emulator_vs_rtl

    def to_dict(self) -> dict[str, Any]:
        out = {
            "samples": self.samples,
            "keras_vs_emulator": self.keras_vs_emulator,
            "emulator_vs_csim": self.emulator_vs_csim,
            "first_mismatches": [dataclasses.asdict(m) for m in self.first_mismatches],
            "keras_caveats": list(self.caveats),
            "stream_leftovers": list(self.stream_leftovers),
        }
        if self.emulator_vs_rtl is not None:  # the RTL leg's key only where it ran
            out["emulator_vs_rtl"] = self.emulator_vs_rtl
        return out

    def describe(self) -> str:
        parts = [f"{self.samples} samples"]
        for key in ("keras_vs_emulator", "emulator_vs_csim"):
            value = getattr(self, key)
            parts.append(f"{key.replace('_vs_', ' vs ')}: {'not run' if value is None else f'{value} mismatching'}")
        if self.emulator_vs_rtl is not None:
            parts.append(f"emulator vs rtl: {self.emulator_vs_rtl} mismatching")
        lines = [", ".join(parts)]
        lines += ["  " + m.describe() for m in self.first_mismatches]
        lines += [f"  caveat at node {c['node']!r}: {c['reason']}" for c in self.caveats]
        lines += [f"  C-simulation: {w}" for w in self.stream_leftovers]
        return "\n".join(lines)


def _mismatching(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Indices of samples whose outputs are not identical (exact equality, no tolerance)."""
    a = a.reshape(len(a), -1)
    b = b.reshape(len(b), -1)
    return np.nonzero(np.any(a != b, axis=1))[0]


def verify(model, graph: Graph, x, project=None, keras_output=None, rtl=None) -> VerifyReport:
    """Compare ``model.predict`` (inference mode), ``emulate(graph)`` and, when ``project``
    (an exported HLS project) is given, its C-simulation, with exact equality.

    ``x`` is cast to float32 once (the precision Keras computes in) and then given to all three,
    so every path sees the same numbers. ``keras_output`` skips a second ``predict`` when the
    caller already has it for these inputs. For a graph frozen with ``strip_softmax=True`` the
    model's logits are compared (see :func:`edgebnn.freeze.keras_logits`), and for one frozen with
    ``output_quantizer=`` those logits through that quantizer (``keras_reference``). ``rtl`` (an
    exported :class:`~edgebnn.backends.rtl.RTLProject`) adds the leg emulator = RTL simulation.
    """
    x = np.asarray(x, dtype=np.float32)
    _check_input_grid(graph, x, model)
    stripped = bool(graph.meta.get("stripped_softmax"))
    if model is not None and (graph.meta.get("output_quantizer") is not None or graph.meta.get("calibration")):
        from .freeze import keras_reference

        model, stripped = keras_reference(model, graph.meta)
    outputs: dict[str, np.ndarray] = {}
    mismatches: list[Mismatch] = []
    emu = emulate(graph, x)
    outputs["emulator"] = emu
    k_vs_e = None
    if model is not None:
        if keras_output is None:
            from .freeze import keras_logits

            keras_output = (keras_logits(model) if stripped else model).predict(x, verbose=0)
        ker = np.asarray(keras_output, dtype=np.float64)
        outputs["keras"] = ker
        bad = _mismatching(ker, emu)
        k_vs_e = len(bad)
        if len(bad):
            mismatches.append(_locate_keras(model, graph, x, int(bad[0]), ker, emu, stripped))
    e_vs_c = None
    if project is not None:
        csim = np.asarray(project.predict(x.astype(np.float64)), dtype=np.float64).reshape(emu.shape)
        outputs["csim"] = csim
        bad = _mismatching(emu, csim)
        e_vs_c = len(bad)
        if len(bad):
            mismatches.append(_locate_csim(project, graph, x, int(bad[0]), emu, csim))
    e_vs_r = None
    if rtl is not None:
        sim = np.asarray(rtl.predict(x.astype(np.float64)), dtype=np.float64).reshape(emu.shape)
        outputs["rtl"] = sim
        bad = _mismatching(emu, sim)
        e_vs_r = len(bad)
        if len(bad):
            mismatches.append(_locate_csim(rtl, graph, x, int(bad[0]), emu, sim, "emulator/rtl"))
    caveats = list(graph.meta.get("keras_caveats", []))
    if not graph.meta.get("keras_float32_exact", True):
        caveats.append(
            {
                "node": "",
                "layer": "",
                "kind": "float32",
                "reason": "accumulators need more than 24 significant bits, which Keras's float32 cannot hold",
            }
        )
    leftovers = list(getattr(project, "stream_warnings", [])) if project is not None else []
    return VerifyReport(len(x), k_vs_e, e_vs_c, mismatches, outputs, caveats, leftovers, e_vs_r)


def _check_input_grid(graph: Graph, x: np.ndarray, model) -> None:
    """A graph frozen with ``input_type`` (the model reads floats) computes what Keras computes
    only on data on that type's grid: refuse other data before comparing."""
    given = graph.meta.get("input_type")
    if given is None or model is None:
        return
    from .errors import EdgebnnError
    from .fixed import FixedType

    t = FixedType.from_string(given)
    if not t.contains(x):
        bad = next(i for i in range(len(x)) if not t.contains(x[i]))
        raise EdgebnnError(
            f"sample {bad} of the data is not on the grid of the input type {given} the graph was frozen with, so Keras "
            f"(which reads it as it is) and the hardware (which converts it) see different numbers; put the data on "
            f"the grid first (FixedType.from_string({given!r}).quantize(x)) or freeze with a type that holds them "
            "(edgebnn.propose_input_type(x))"
        )


def _locate_csim(project, graph: Graph, x, i: int, emu, csim, between: str = "emulator/csim") -> Mismatch:
    """The first node where the traced simulation (C or RTL: ``between``) differs from the emulator on sample i."""
    if hasattr(project, "trace"):
        c_nodes = project.trace(x[i : i + 1])
        e_nodes = emulate(graph, x[i : i + 1], return_all=True)
        for node in graph.nodes:
            if node.name in c_nodes and not np.array_equal(c_nodes[node.name], e_nodes[node.name]):
                return Mismatch(
                    between, i, node.name, node.source, e_nodes[node.name][0].tolist(), c_nodes[node.name][0].tolist()
                )
    out = graph.output
    return Mismatch(between, i, out.name, out.source, emu[i].tolist(), csim[i].tolist())


def _as_keras_holds(keras_value, emulated) -> bool:
    """Keras's traced value of a node is the emulator's, exactly or as Keras's float32 tensor
    holds it: a sum that a layer computes exactly in float64 and rounds once to float32
    (``layers.sums_exactly``) is the node's exact value rounded once. Flat: a requantization
    folded with a global pool's flattening division is flat in Keras."""
    k, e = np.reshape(keras_value, -1), np.reshape(emulated, -1)
    return k.shape == e.shape and (np.array_equal(k, e) or np.array_equal(k, e.astype(np.float32)))


def _locate_keras(model, graph: Graph, x, i: int, ker, emu, stripped: bool) -> Mismatch:
    from .freeze import trace  # Keras side only

    k_nodes = trace(model, x[i : i + 1], strip_softmax=stripped, input_type=graph.meta.get("input_type"))
    e_nodes = emulate(graph, x[i : i + 1], return_all=True)
    for node in graph.nodes:
        if node.name in k_nodes and not _as_keras_holds(k_nodes[node.name], e_nodes[node.name]):
            return Mismatch(
                "keras/emulator",
                i,
                node.name,
                node.source,
                k_nodes[node.name][0].tolist(),
                e_nodes[node.name][0].tolist(),
            )
    # eager Keras agrees node by node: the compiled predict path computed differently
    return Mismatch(
        "keras/emulator",
        i,
        graph.output.name + " (model.predict only; eager Keras agrees)",
        graph.output.source,
        ker[i].tolist(),
        emu[i].tolist(),
    )
