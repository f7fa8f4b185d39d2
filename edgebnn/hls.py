"""Export a deployment graph to an hls4ml project and run its C-simulation.

The project is written by hls4ml itself (its ``ModelGraph``, optimizer flows, writer and
``nnet_utils``); edgebnn only hands it a layer list and a configuration read from the graph:

``input``      hls4ml ``Input``; its type is the graph's input type, so the bridge's float to
               ``ap_fixed`` conversion *is* the input quantization (rounding and overflow mode).
``dense``      hls4ml ``Dense`` with weights and bias given as values (code * lsb) in their exact
               types; accumulator and result both take the node's type, which is exact (wide
               enough, on the product grid, WRAP), so nothing rounds.
``conv2d``     hls4ml ``Conv2D`` (channels last, weights in Keras layout (kh, kw, C, F)) with types
               as for dense and the graph's explicit padding as pad_top/bottom/left/right; hls4ml
               pads with zeros only, so a node with a non-zero ``pad_code`` is refused. In
               io_stream hls4ml moves the padding into a ``ZeroPadding2D`` layer of the input's type.
               hls4ml runs a 1x1 kernel as a ``PointwiseConv2D`` (same weights and types); in the
               Resource strategy its reuse factor is snapped here, which hls4ml's rewrite forgets.
``maxpool2d``  hls4ml ``Pooling2D`` (class ``MaxPooling2D``, as its Keras converters emit; valid
               padding, no pad amounts) whose accumulator and result types are the node's type (the
               input's): a maximum of values on one grid needs no rounding. io_stream hls4ml pools
               only non-overlapping windows (stride = pool size); other strides are refused there.
``flatten``    hls4ml ``Reshape`` to one axis (what its Keras converter emits for ``Flatten``): a
               no-op in io_parallel (dropped when it is the last layer) and in io_stream (the next
               layer reads the pixels' packets; as the last layer hls4ml repacks it, ``Repack``).
               Only a dense layer reads those packets right, so in io_stream the thresholds and
               casts right after a flatten run before it (see ``_hls_chain``).
``threshold``  edgebnn's own ``EdgebnnThreshold`` layer (``hls_templates/nnet_edgebnn_threshold.h``):
               thresholds held in the input's type, levels in the output type; an array and an
               hls::stream version, one channel index per flat element either way.
``cast``       hls4ml ``Activation`` (``relu`` or ``linear``) whose result type is the node's type:
               the C++ assignment is the ap_fixed conversion with that type's modes.

The weights are compiled into the C-simulation library (hls4ml's ``WriteWeightsTxt`` off), so
the library never reads the project folder; a folder path hls4ml's build cannot quote (a double
quote, a backslash) is refused before anything is written.

Every precision is set explicitly, and after hls4ml's flows have run the model is checked
against the graph (layers, every type, every weight), so an hls4ml pass that rewrites
anything stops the export instead of producing a project that is silently not bit-exact.

Nothing here imports TensorFlow or Keras.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import keyword
import math
import os
import pathlib
import re
import shutil
import tempfile
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from hls4ml.backends import get_backend
from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate
from hls4ml.model import ModelGraph
from hls4ml.model.attributes import Attribute, TypeAttribute, WeightAttribute
from hls4ml.model.layers import Layer, layer_map, register_layer
from hls4ml.model.optimizer.optimizer import optimizer_map

from .errors import EdgebnnError
from .fixed import FixedType, cast_asserts
from .graph import OPS, Graph, Node
from .outputs import staged_dir
from .resources import templates_dir

BACKENDS = ("Vitis", "Vivado")
IO_TYPES = ("io_parallel", "io_stream")
STRATEGIES = ("Latency", "Resource")
THRESHOLD_CLASS = "EdgebnnThreshold"
THRESHOLD_HEADER = "nnet_edgebnn_threshold.h"

# every code that reaches C++ goes through a decimal literal parsed as a double
_MAX_EXACT_CODE = 2**53


class HLSExportWarning(UserWarning):
    """Something the user should know about an exported project (e.g. a snapped reuse factor)."""


# ----------------------------------------------------------------------------- project
class HLSProject:
    """An exported hls4ml project: ``path`` on disk, C-simulation through ``predict``.

    Attributes:
        path: the project folder (holds ``build_prj.tcl`` and ``firmware/``).
        graph: the deployment graph it was exported from.
        model: the underlying ``hls4ml.model.ModelGraph``.
        warnings: messages about the export the user should read (one sentence each).
    """

    def __init__(self, path: str, model, graph: Graph, warnings_: list[str], export_kwargs=None):
        self.path = path
        self.model = model
        self.graph = graph
        self.warnings = list(warnings_)
        self._export_kwargs = dict(export_kwargs or {})
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
            raise EdgebnnError(f"HLS project folder {self.path!r} no longer holds the project this object exported "
                               "(another export replaced it or it was changed); export the graph again")
        # hls4ml builds in, and loads the library from, the configured output folder
        self.model.config.config["OutputDir"] = self.path
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                self.model._compile()  # ModelGraph.compile() would first rewrite the whole project
        except Exception as err:
            raise RuntimeError(
                f"could not build or load the C-simulation of {self.path!r} ({err}):\n{out.getvalue()}"
            ) from err
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
        x = self._inputs(x)
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore", HLSExportWarning)
            twin = export(self.graph, pathlib.Path(tmp) / "trace", trace=True, **self._export_kwargs)
            with contextlib.redirect_stdout(io.StringIO()):
                _, traces = twin.model.trace(np.ascontiguousarray(x.reshape(len(x), -1)))
        names = _hls_names(self.graph)
        # a flatten moved behind requantizations (io_stream) holds their results, not its own
        moved = _hls_chain(self.graph, self._export_kwargs.get("io_type", "io_parallel")).moved
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


# ----------------------------------------------------------------------------- export
def export(
    graph: Graph,
    output_dir,
    board: Mapping[str, Any] | None = None,
    part: str | None = None,
    clock_period: float | None = None,
    backend: str = "Vitis",
    io_type: str = "io_parallel",
    strategy: str = "Latency",
    reuse_factor: int = 1,
    project_name: str = "myproject",
    force: bool = False,
    trace: bool = False,
) -> HLSProject:
    """Write ``graph`` as an hls4ml project into ``output_dir``.

    Args:
        graph: the deployment graph.
        output_dir: folder to create. An existing one is refused unless ``force``; the project
            is written into a temporary sibling folder and moved into place when complete.
        board: a board description with ``part`` and ``clock_period_ns`` (a dict or an
            ``edgebnn.boards`` entry); ``part`` / ``clock_period`` given here override it.
        part: FPGA part string, e.g. ``xc7z020clg400-1``.
        clock_period: target clock period in ns.
        backend: ``Vitis`` or ``Vivado``.
        io_type: ``io_parallel`` (arrays) or ``io_stream`` (hls::stream of pixels; convolutions
            compile much faster there).
        strategy: ``Latency`` or ``Resource``.
        reuse_factor: hls4ml reuse factor for every layer (hls4ml may snap it; see ``.warnings``).
        project_name: the HLS top function / project name (a C identifier).
        force: replace an existing ``output_dir``, only after the new project is complete.
        trace: compile hls4ml's per-layer tracing into the C-simulation (``HLSProject.trace``
            does this on a temporary twin; the default keeps the project as plain as possible).

    Returns:
        an :class:`HLSProject`; call ``.predict(x)`` to run the C-simulation.
    """
    backend_name = _check_choice("backend", backend, BACKENDS, "use Vitis or Vivado")
    io_type = _check_choice("io_type", io_type, IO_TYPES, "use io_parallel or io_stream")
    strategy = _check_choice("strategy", strategy, STRATEGIES, "use Latency or Resource")
    if isinstance(reuse_factor, bool) or not isinstance(reuse_factor, (int, np.integer)) or reuse_factor < 1:
        raise EdgebnnError(f"reuse_factor must be an integer >= 1, got {reuse_factor!r}")
    reuse_factor = int(reuse_factor)
    if not isinstance(project_name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", project_name) \
            or keyword.iskeyword(project_name):
        raise EdgebnnError(f"project_name {project_name!r} must be a C identifier (letters, digits, underscores)")
    part, clock_period = _target(board, part, clock_period)
    final = check_output_path(output_dir)
    _check_graph(graph, io_type)

    _register_hls4ml()
    names = _hls_names(graph)
    chain = _hls_chain(graph, io_type)
    layers = _layer_list(chain, names)
    messages: list[str] = []
    with staged_dir(final, force=force, what="HLS project folder") as tmp:
        config = _hls_config(chain, names, str(tmp), project_name, backend_name, part, clock_period,
                             io_type, strategy, reuse_factor, trace)
        out = io.StringIO()
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
            warnings.simplefilter("always")
            model = ModelGraph.from_layer_list(config, layers, [names[chain.input.name]],
                                               [names[chain.output.name]])
            messages += _check_model(model, chain, names, reuse_factor)
            model.write()
        # hls4ml's pointwise pass rebuilds a 1x1 Conv2D from the configuration (strategy 'Resource')
        # and then restores the lower-case strategy its templates need: nothing the user must know
        messages += [f"hls4ml: {w.message}" for w in caught
                     if not re.match(r"Overriding attribute 'strategy' of layer '\w+' \(PointwiseConv2D\)", str(w.message))]
        messages += _printed_warnings(out.getvalue())
        if graph.output.type.width > 53:
            messages.append(
                f"the output type {graph.output.type} is wider than 53 bits, so predict() (float64) "
                "cannot return every output value exactly; the HLS project itself is exact"
            )
    model.config.config["OutputDir"] = str(final)
    for msg in messages:
        warnings.warn(msg, HLSExportWarning, stacklevel=2)
    export_kwargs = dict(part=part, clock_period=clock_period, backend=backend_name, io_type=io_type,
                         strategy=strategy, reuse_factor=reuse_factor, project_name=project_name)
    return HLSProject(str(final), model, graph, messages, export_kwargs)


# ----------------------------------------------------------------------------- checks
def check_compiler() -> None:
    """Raise an :class:`EdgebnnError` unless g++, which builds the C-simulation, is on PATH.

    Cheap: call it before training when the run will C-simulate.
    """
    if shutil.which("g++") is None:
        raise EdgebnnError("g++ was not found on PATH; install it (e.g. 'apt-get install g++' or Xcode's command "
                           "line tools) to build the C-simulation, or skip the C-simulation")


def check_output_path(output_dir) -> pathlib.Path:
    """The absolute project folder for ``output_dir``; raises an :class:`EdgebnnError` for a
    path hls4ml's C-simulation build cannot handle.

    hls4ml's ``build_lib.sh`` passes the folder to g++ inside a C string literal
    (``-D WEIGHTS_DIR="\\"<folder>/firmware/weights\\""``), where a double quote ends the string
    and a backslash starts an escape sequence; control characters break the shell script.
    Spaces, quotes ``'``, ``$`` and non-ASCII letters work.
    """
    try:
        final = pathlib.Path(os.fspath(output_dir)).absolute()
    except TypeError:
        raise EdgebnnError(f"HLS project folder must be a path, got {output_dir!r}") from None
    text = str(final)
    bad = sorted({c for c in text if c in '"\\' or ord(c) < 32 or ord(c) == 127})
    if bad:
        names = ", ".join({'"': "a double quote", "\\": "a backslash"}.get(c, f"the control character {c!r}")
                          for c in bad)
        shown = repr(text) if any(ord(c) < 32 or ord(c) == 127 for c in bad) else f"'{text}'"
        raise EdgebnnError(f"HLS project folder {shown} contains {names}, which hls4ml's C-simulation build cannot "
                           "handle; choose a folder path without it")
    return final


def _check_choice(what: str, value, choices, advice: str) -> str:
    for choice in choices:
        if isinstance(value, str) and value.lower() == choice.lower():
            return choice
    raise EdgebnnError(f"{what} {value!r} is not supported by edgebnn export; {advice}")


def _target(board, part, clock_period):
    if board is not None:
        if part is None:
            part = _board_value(board, "part")
        if clock_period is None:
            clock_period = _board_value(board, "clock_period_ns")
    if part is not None and (not isinstance(part, str) or not part.strip()):
        raise EdgebnnError(f"FPGA part must be a non-empty string like 'xc7z020clg400-1', got {part!r}")
    if clock_period is not None:
        if isinstance(clock_period, bool) or not isinstance(clock_period, (int, float, np.number)) \
                or not math.isfinite(clock_period) or clock_period <= 0:
            raise EdgebnnError(f"clock period must be a positive number of ns, got {clock_period!r}")
        clock_period = int(clock_period) if float(clock_period).is_integer() else float(clock_period)
    return part, clock_period


def _board_value(board, key, default=None, required=True):
    """``board[key]`` for a dict, ``board.key`` for an ``edgebnn.boards.Board``."""
    if isinstance(board, Mapping):
        value = board.get(key, default)
    else:
        value = getattr(board, key, default)
    if value is None and required:
        name = _board_value(board, "name", repr(board), required=False)
        raise EdgebnnError(f"board {name} has no {key!r}; add it to the board profile or pass it to export")
    return value


def _check_graph(graph: Graph, io_type: str = "io_parallel") -> None:
    """Refuse anything this exporter cannot reproduce bit for bit, with one sentence each."""
    previous = None
    for node in graph.nodes:
        where = f"graph node {node.name!r} ({node.op})"
        if node.op not in OPS:
            raise EdgebnnError(f"{where} cannot be exported to hls4ml; export supports {', '.join(OPS)} nodes")
        if previous is not None and node.inputs != [previous.name]:
            raise EdgebnnError(f"{where} does not read the node before it; export supports chains of nodes only")
        if node.op == "dense":
            _check_dense(node, previous, where)
        if node.op == "conv2d":
            _check_conv2d(node, previous, where)
            kh, kw = (int(d) for d in node.params["weight"].shape[:2])
            if io_type == "io_stream" and kh == 1 and kw > 1 and int(node.attrs["strides"][0]) > 1:
                raise EdgebnnError(
                    f"{where} has a one-row kernel ({kh}, {kw}) with a row stride of {node.attrs['strides'][0]}, "
                    "which hls4ml's io_stream convolution ignores (it convolves every row and leaves data in "
                    "its output stream); use io_parallel, a row stride of 1 or a kernel of two or more rows"
                )
        if node.op == "maxpool2d" and io_type == "io_stream" and node.attrs["pool"] != node.attrs["strides"]:
            raise EdgebnnError(
                f"{where} pools {node.attrs['pool']} windows with strides {node.attrs['strides']}, but hls4ml's "
                "io_stream pooling needs strides equal to the pool size; use io_parallel or strides=pool_size"
            )
        if node.op == "cast" and cast_asserts(previous.type, node.type):
            raise EdgebnnError(
                f"{where}: converting {previous.type} to {node.type} drops more bits than the source holds, "
                "which aborts the C-simulation (an ap_fixed assertion); use TRN rounding or a wider input type"
            )
        for key in ("weight", "bias", "thresholds", "levels"):
            if key in node.params and np.abs(node.params[key]).max(initial=0) >= _MAX_EXACT_CODE:
                raise EdgebnnError(f"{where}: its {key} codes need more than 53 bits, which hls4ml cannot write "
                                   "exactly; use narrower types")
        previous = node


def _check_dense(node: Node, src: Node, where: str) -> None:
    if len(src.shape) != 1:
        raise EdgebnnError(
            f"{where} reads a tensor of shape {src.shape}; export supports dense layers on flat inputs only, "
            "flatten before the dense layer"
        )
    _check_accumulator(node, src, where)


def _check_conv2d(node: Node, src: Node, where: str) -> None:
    if any(node.attrs["padding"][0] + node.attrs["padding"][1]) and int(node.attrs["pad_code"]) != 0:
        raise EdgebnnError(
            f"{where} pads with the value {src.type.from_codes(node.attrs['pad_code'])} but hls4ml pads "
            "convolutions with zeros only; train it with pad_values=0 or padding='valid'"
        )
    _check_accumulator(node, src, where)


def _check_accumulator(node: Node, src: Node, where: str) -> None:
    acc = node.type
    wt = node.fixed_attr("weight_type")
    grid = src.type.lsb_exp + wt.lsb_exp
    if "bias" in node.params:
        grid = min(grid, node.fixed_attr("bias_type").lsb_exp)
    if acc.overflow != "WRAP" or acc.sat_bits or acc.lsb_exp > grid:
        raise EdgebnnError(
            f"{where}: its type {acc} is not an exact accumulator (needs WRAP overflow and a step of at most "
            f"2**{grid}); rebuild the node with edgebnn.graph.{node.op}_node"
        )


# ----------------------------------------------------------------------------- hls4ml model
@dataclasses.dataclass
class _Chain:
    """The graph's nodes in the order and shapes hls4ml is given them (see :func:`_hls_chain`)."""

    nodes: list[Node]
    moved: frozenset[str] = frozenset()  # flatten nodes moved behind the requantizations after them

    def __getitem__(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    @property
    def input(self) -> Node:
        return self.nodes[0]

    @property
    def output(self) -> Node:
        return self.nodes[-1]


_ELEMENTWISE = ("threshold", "cast")


def _hls_chain(graph: Graph, io_type: str) -> _Chain:
    """The node chain hls4ml gets: the graph's, except that in io_stream a requantization
    (threshold, cast) right after a flatten is applied before the flatten.

    hls4ml's io_stream flatten is a view of the pixel stream (packets of one pixel's channels)
    that only a dense layer knows how to read; an activation after it writes packets of the whole
    flat size while reading pixel packets, so it reads too little and leaves data in the stream.
    An elementwise op commutes with flatten (channels-last row-major order is the stream's pixel
    order), so each moved node keeps its per-flat-feature tables and sees the pixel packets, and
    the flatten (or flattens) follow it with the last moved node's type.
    """
    if io_type != "io_stream":
        return _Chain(list(graph.nodes))
    nodes: list[Node] = []
    pending: list[Node] = []  # flattens not yet emitted
    moved: set[str] = set()

    def emit_pending():
        for flat in pending:
            src = nodes[-1]
            nodes.append(dataclasses.replace(flat, inputs=[src.name], type=src.type))
        pending.clear()

    for node in graph.nodes:
        if node.op == "flatten":
            pending.append(node)
        elif pending and node.op in _ELEMENTWISE:
            src = nodes[-1]
            nodes.append(dataclasses.replace(node, inputs=[src.name], shape=src.shape))
            moved.update(f.name for f in pending)
        else:
            if pending:
                emit_pending()
                node = dataclasses.replace(node, inputs=[nodes[-1].name])
            nodes.append(node)
    emit_pending()
    return _Chain(nodes, frozenset(moved))


def _precision(t: FixedType) -> str:
    """hls4ml precision string with every mode spelled out (always a fixed type: hls4ml
    special-cases ``ap_uint<1>`` data and ``ap_int<2>`` weights)."""
    u = "" if t.signed else "u"
    return f"{u}fixed<{t.width},{t.integer},{t.rounding},{t.overflow},{t.sat_bits}>"


def _weight_precision(t: FixedType, codes: np.ndarray) -> str:
    # int<2> weights make hls4ml pick its 'weight_ternary' product (0, -x or x), which is cheap
    # and exact for codes -1, 0, +1 only (it maps -2 to +x); any other weight uses a plain product.
    if t.signed and t.width == 2 and t.integer == 2 and np.isin(codes, (-1, 0, 1)).all():
        return "int<2>"
    return _precision(t)


def _hls_names(graph: Graph) -> dict[str, str]:
    """Graph node name -> a C-identifier layer name hls4ml accepts ('input' is reserved)."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for node in graph.nodes:
        base = re.sub(r"\W", "_", node.name, flags=re.ASCII).lower() or node.op
        if base[0].isdigit():
            base = f"{node.op}_{base}"
        if base == "input" or keyword.iskeyword(base):
            base = f"{base}_layer"
        name, i = base, 1
        while name in used:
            i += 1
            name = f"{base}_{i}"
        used.add(name)
        names[node.name] = name
    return names


def _hls_config(graph, names, output_dir, project_name, backend, part, clock_period, io_type,
                strategy, reuse_factor, trace=False) -> dict:
    kwargs = {"io_type": io_type}
    if part is not None:
        kwargs["part"] = part
    if clock_period is not None:
        kwargs["clock_period"] = clock_period
    config = get_backend(backend).create_initial_config(**kwargs)
    config.update(OutputDir=output_dir, ProjectName=project_name, Backend=backend,
                  InputData=None, OutputPredictions=None)
    config["WriterConfig"]["WriteTar"] = False
    # weights compiled into the C-simulation library (as for synthesis) instead of read at its
    # first call from a folder path built into it: the library then works wherever the folder
    # is moved (export stages it elsewhere first), and a path never decides what C++ reads
    config["WriterConfig"]["WriteWeightsTxt"] = False
    layer_cfg = {}
    for node in graph.nodes:
        layer_cfg[names[node.name]] = {
            "Precision": _layer_precisions(graph, node),
            "ReuseFactor": _layer_reuse_factor(get_backend(backend), node, strategy, reuse_factor),
            "Strategy": strategy,
            "Trace": trace,
        }
    if graph.output.op == "flatten":  # io_stream replaces a final Reshape by a Repack layer of this name
        layer_cfg[f"repack_{names[graph.output.name]}"] = layer_cfg[names[graph.output.name]]
    config["HLSConfig"] = {
        # no model-wide default precision: a layer hls4ml might add without one fails loudly
        "Model": {"ReuseFactor": reuse_factor, "Strategy": strategy, "BitExact": False},
        "LayerName": layer_cfg,
    }
    return config


def _layer_reuse_factor(backend, node: Node, strategy: str, reuse_factor: int) -> int:
    """The reuse factor a layer is configured with: ``reuse_factor``, except for a 1x1 conv2d in
    the Resource strategy, which gets the nearest valid one as hls4ml would choose it.

    hls4ml snaps an invalid reuse factor of a Conv2D, then rebuilds a 1x1 one as a
    PointwiseConv2D from the configuration, which restores the invalid value; its C++ then
    fails an assertion that aborts the Python process running the C-simulation.
    """
    if strategy != "Resource" or node.op != "conv2d" or tuple(node.params["weight"].shape[:2]) != (1, 1):
        return reuse_factor
    _, _, c, f = node.params["weight"].shape
    valid = backend.get_valid_reuse_factors(int(c), int(f))
    return reuse_factor if reuse_factor in valid else backend.get_closest_reuse_factor(valid, reuse_factor)


def _layer_precisions(graph: Graph, node: Node) -> dict[str, str]:
    if node.op == "input":
        return {"result": _precision(node.type)}
    if node.op in ("dense", "conv2d"):
        p = {
            "weight": _weight_precision(node.fixed_attr("weight_type"), node.params["weight"]),
            "accum": _precision(node.type),
            "result": _precision(node.type),
        }
        if "bias" in node.params:
            p["bias"] = _precision(node.fixed_attr("bias_type"))
        return p
    if node.op in ("cast", "flatten"):
        return {"result": _precision(node.type)}
    if node.op == "maxpool2d":
        return {"accum": _precision(node.type), "result": _precision(node.type)}
    src = graph[node.inputs[0]]
    return {"thresholds": _precision(src.type), "levels": _precision(node.type), "result": _precision(node.type)}


def _layer_list(graph: Graph, names: dict[str, str]) -> list[dict]:
    layers = []
    for node in graph.nodes:
        name = names[node.name]
        if node.op == "input":
            layers.append({"class_name": "InputLayer", "name": name, "input_shape": list(node.shape)})
            continue
        src = graph[node.inputs[0]]
        entry = {"name": name, "inputs": [names[src.name]]}
        if node.op == "dense":
            w = node.params["weight"]
            wt = node.fixed_attr("weight_type")
            bias = None
            if "bias" in node.params:
                bias = node.fixed_attr("bias_type").from_codes(node.params["bias"])
            entry.update(class_name="Dense", n_in=int(w.shape[0]), n_out=int(w.shape[1]),
                         data_format="channels_last", weight_data=wt.from_codes(w), bias_data=bias)
        elif node.op == "conv2d":
            w = node.params["weight"]
            kh, kw, c, f = (int(d) for d in w.shape)
            (pt, pb), (pl, pr) = node.attrs["padding"]
            sh, sw = node.attrs["strides"]
            bias = None
            if "bias" in node.params:
                bias = node.fixed_attr("bias_type").from_codes(node.params["bias"])
            entry.update(class_name="Conv2D", data_format="channels_last",
                         in_height=int(src.shape[0]), in_width=int(src.shape[1]), n_chan=c,
                         out_height=int(node.shape[0]), out_width=int(node.shape[1]), n_filt=f,
                         filt_height=kh, filt_width=kw, stride_height=int(sh), stride_width=int(sw),
                         pad_top=int(pt), pad_bottom=int(pb), pad_left=int(pl), pad_right=int(pr),
                         weight_data=node.fixed_attr("weight_type").from_codes(w), bias_data=bias)
        elif node.op == "maxpool2d":
            (ph, pw), (sh, sw) = node.attrs["pool"], node.attrs["strides"]
            entry.update(class_name="MaxPooling2D", data_format="channels_last",
                         in_height=int(src.shape[0]), in_width=int(src.shape[1]), n_filt=int(src.shape[2]),
                         n_chan=int(src.shape[2]), out_height=int(node.shape[0]), out_width=int(node.shape[1]),
                         pool_height=int(ph), pool_width=int(pw), stride_height=int(sh), stride_width=int(sw),
                         padding="valid", pad_top=0, pad_bottom=0, pad_left=0, pad_right=0)
        elif node.op == "flatten":
            entry.update(class_name="Reshape", target_shape=[int(node.shape[0])])
        elif node.op == "cast":
            entry.update(class_name="Activation", activation="relu" if node.attrs["relu"] else "linear",
                         n_in=int(np.prod(node.shape)))
        else:
            t, lv = _threshold_tables(node)
            # one table row per channel: the last axis, or every flat feature of a threshold moved
            # before a flatten in io_stream (the template's channel is the flat index % n_chan)
            entry.update(class_name=THRESHOLD_CLASS, n_in=int(np.prod(node.shape)), n_chan=int(t.shape[0]),
                         n_thresholds=int(t.shape[1]),
                         thresholds_data=src.type.from_codes(t).reshape(-1),
                         levels_data=node.type.from_codes(lv).reshape(-1))
        layers.append(entry)
    return layers


def _threshold_tables(node: Node):
    t, lv = node.params["thresholds"], node.params["levels"]
    if t.shape[1] == 0:
        # a constant channel: one dummy threshold whose both levels are the constant
        t = np.zeros((t.shape[0], 1), dtype=np.int64)
        lv = np.repeat(lv, 2, axis=1)
    return t, lv


def _check_model(model, graph: Graph, names: dict[str, str], reuse_factor: int) -> list[str]:
    """Compare the hls4ml model after its flows with the graph; returns warnings, raises on
    anything that would break bit-exactness."""
    backend = model.config.backend
    layers = list(model.get_layers())
    stream = model.config.get_config_value("IOType") == "io_stream"
    # (hls4ml layer name, class, graph node whose output type the layer's result must have)
    expected = []
    for n in graph.nodes:
        if n.op == "conv2d" and stream and any(n.attrs["padding"][0] + n.attrs["padding"][1]):
            # io_stream pads in a ZeroPadding2D layer of the input's type: zeros are exact in any type
            expected.append((f"zp2d_{names[n.name]}", "ZeroPadding2D", graph[n.inputs[0]]))
        expected.append((names[n.name], _hls_class(n), n))
    if graph.output.op == "flatten":
        if stream:  # hls4ml repacks the stream into one packet
            expected[-1] = (f"repack_{expected[-1][0]}", "Repack", graph.output)
        else:  # hls4ml removes a final Reshape (a no-op on flat arrays)
            expected.pop()
    want = [(name, cls) for name, cls, _ in expected]
    got = [(layer.name, layer.class_name) for layer in layers]
    if got != want:
        raise RuntimeError(f"hls4ml rewrote the layer list to {got} (expected {want}); the project would not be "
                           "bit-exact, please report this to edgebnn")
    messages = []

    def expect(layer, what, precision, text):
        want_p = backend.convert_precision_string(text)
        # transform_types wraps precisions in backend subclasses, hence isinstance
        ok = isinstance(precision, type(want_p)) and precision == want_p
        if not ok:
            raise RuntimeError(f"hls4ml changed the {what} type of layer {layer.name!r} to {precision} "
                               f"(expected {text}); please report this to edgebnn")

    for layer, (_, cls, node) in zip(layers, expected):
        expect(layer, "result", layer.get_output_variable().type.precision, _precision(node.type)
               if node.op != "input" else _layer_precisions(graph, node)["result"])
        if cls in ("ZeroPadding2D", "Repack"):
            continue
        prec = _layer_precisions(graph, node)
        if node.op in ("dense", "conv2d"):
            expect(layer, "accumulator", layer.get_attr("accum_t").precision, prec["accum"])
            wvar = layer.get_weights("weight")
            expect(layer, "weight", wvar.type.precision, prec["weight"])
            w = node.fixed_attr("weight_type").from_codes(node.params["weight"])
            data = wvar.data
            if layer.get_attr("_weights_transposed", False):  # Resource strategy: (n_out, ...) first
                data = np.moveaxis(data, 0, -1)
            if not np.array_equal(data, w):
                raise RuntimeError(f"hls4ml changed the weights of layer {layer.name!r}; please report this to edgebnn")
            bvar = layer.get_weights("bias")
            if "bias" in node.params:
                expect(layer, "bias", bvar.type.precision, prec["bias"])
                b = node.fixed_attr("bias_type").from_codes(node.params["bias"])
            else:
                b = np.zeros(node.shape[-1])
            if not np.array_equal(bvar.data, b):
                raise RuntimeError(f"hls4ml changed the bias of layer {layer.name!r}; please report this to edgebnn")
            rf = layer.get_attr("reuse_factor")
            valid = backend.get_valid_reuse_factors(*backend.get_layer_mult_size(layer))
            if layer.get_attr("strategy", "").lower() == "resource" and rf not in valid:
                # its C++ would fail an assertion, which aborts the process running the C-simulation
                raise RuntimeError(f"hls4ml left layer {layer.name!r} with the invalid reuse factor {rf}; "
                                   f"use one of {', '.join(map(str, valid))}, and please report this to edgebnn")
            if rf != reuse_factor:
                messages.append(
                    f"hls4ml changed the reuse factor of layer {node.name!r} from {reuse_factor} to {rf}; "
                    f"valid reuse factors there are {', '.join(map(str, valid))}"
                )
        elif node.op == "maxpool2d":
            expect(layer, "accumulator", layer.get_attr("accum_t").precision, prec["accum"])
            if layer.get_attr("pool_op") != "Max":
                raise RuntimeError(f"hls4ml made layer {layer.name!r} pool with {layer.get_attr('pool_op')}; "
                                   "please report this to edgebnn")
        if stream and node.op in _ELEMENTWISE:
            # one packet out per packet in: hls4ml's activations (and our threshold) need both the same
            packing = [(t.n_elem, t.n_pack, t.unpack) for t in
                       (layer.get_input_variable().type, layer.get_output_variable().type)]
            if packing[0] != packing[1]:
                raise RuntimeError(f"hls4ml streams layer {layer.name!r} in packets of {packing[0][0]} values and "
                                   f"writes packets of {packing[1][0]}; please report this to edgebnn")
        if node.op == "threshold":
            expect(layer, "thresholds", layer.get_weights("thresholds").type.precision, prec["thresholds"])
            expect(layer, "levels", layer.get_weights("levels").type.precision, prec["levels"])
    return messages


def _hls_class(node: Node) -> str:
    """The hls4ml class a node's layer has after hls4ml's flows."""
    if node.op == "conv2d" and tuple(node.params["weight"].shape[:2]) == (1, 1):
        # hls4ml's optimize_pointwise_conv: the same layer and weights, 1x1 kernels in C++
        return "PointwiseConv2D"
    return _HLS_CLASSES[node.op]


_HLS_CLASSES = {"input": "Input", "dense": "Dense", "conv2d": "Conv2D", "maxpool2d": "Pooling2D", "flatten": "Reshape",
                "threshold": THRESHOLD_CLASS, "cast": "Activation"}


def _printed_warnings(text: str) -> list[str]:
    """hls4ml's printed ``WARNING: ...`` messages (continuation lines joined), except the
    reuse-factor one, which _check_model words for the user, and the final-Reshape one."""
    messages: list[list[str]] = []
    current = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("WARNING"):
            current = [line.removeprefix("WARNING:").strip()]
            messages.append(current)
        elif line and current is not None:
            current.append(line)
        else:
            current = None
    # the final-Reshape one is expected: _check_model accounts for the removed no-op
    return [f"hls4ml: {' '.join(m)}" for m in messages
            if "ReuseFactor" not in m[0] and "Final layer is a Reshape" not in m[0]]


# ----------------------------------------------------------------------------- hls4ml extension
class EdgebnnThreshold(Layer):
    """hls4ml layer of a graph ``threshold`` node: y = levels[c, #{k: thresholds[c, k] <= x}]."""

    _expected_attributes = [  # noqa: RUF012 - hls4ml's Layer API reads this class list
        Attribute("n_in"),
        Attribute("n_chan"),
        Attribute("n_thresholds"),
        WeightAttribute("thresholds"),
        WeightAttribute("levels"),
        TypeAttribute("thresholds"),
        TypeAttribute("levels"),
    ]

    def initialize(self):
        self.add_output_variable(list(self.get_input_variable().shape))
        # precisions come from the layer's config: the input's type and the node's type
        self.add_weights_variable(name="thresholds", var_name="t{index}", data="thresholds")
        self.add_weights_variable(name="levels", var_name="l{index}", data="levels")


class EdgebnnThresholdConfigTemplate(LayerConfigTemplate):
    def __init__(self):
        super().__init__(EdgebnnThreshold)
        self.template = """struct config{index} : nnet::edgebnn_threshold_config {{
    static const unsigned n_in = {n_in};
    static const unsigned n_chan = {n_chan};
    static const unsigned n_thresholds = {n_thresholds};
    static const unsigned io_type = nnet::{iotype};
    static const unsigned reuse_factor = {reuse};
    typedef {thresholds_t.name} threshold_t;
    typedef {levels_t.name} level_t;
}};\n"""

    def format(self, node):
        return self.template.format(**self._default_config_params(node))


class EdgebnnThresholdFunctionTemplate(FunctionCallTemplate):
    def __init__(self):
        super().__init__(EdgebnnThreshold, include_header=[f"nnet_utils/{THRESHOLD_HEADER}"])
        self.template = "nnet::edgebnn_threshold<{input_t}, {output_t}, {config}>({input}, {output}, {t}, {l});"

    def format(self, node):
        params = self._default_function_params(node)
        params["t"] = node.get_weights("thresholds").name
        params["l"] = node.get_weights("levels").name
        return self.template.format(**params)


def _register_hls4ml() -> None:
    """Teach hls4ml the threshold layer, its templates and its header. Idempotent: hls4ml's
    registries are global and refuse a second registration, so each step checks first."""
    if THRESHOLD_CLASS not in layer_map:
        register_layer(THRESHOLD_CLASS, EdgebnnThreshold)
    # templates go to the Vivado backend only: the Vitis flow applies vivado:apply_templates too
    vivado = get_backend("Vivado")
    for template in (EdgebnnThresholdConfigTemplate, EdgebnnThresholdFunctionTemplate):
        if f"vivado:{template().get_name()}" not in optimizer_map:
            vivado.register_template(template)
    header = str(templates_dir() / THRESHOLD_HEADER)
    for name in BACKENDS:
        get_backend(name).register_source(header)  # kept in a dict by destination: idempotent
