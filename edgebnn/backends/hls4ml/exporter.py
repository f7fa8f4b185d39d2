"""``export()``: write a deployment graph as an hls4ml project, all or nothing.

The options and the graph are checked first (one sentence for anything hls4ml cannot
reproduce bit for bit: the chain here, each op's part in its lowering module's ``check``, the
reuse factors in ``reuse``), then
hls4ml builds its model from the layer list and configuration (``model``), runs its flows, the
result is checked against the graph and the project is written into a staged folder that is
moved into place when complete.

The weights are compiled into the C-simulation library (hls4ml's ``WriteWeightsTxt`` off), so
the library never reads the project folder; a folder path hls4ml's build cannot quote (a double
quote, a backslash) is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import io
import keyword
import os
import pathlib
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from hls4ml.model import ModelGraph

from ...boards import Board, require_hls4ml
from ...errors import EdgebnnError
from ...graph import Graph
from ...outputs import staged_dir
from ..target import BACKENDS, Target, make_target
from . import pad_layer, pool_layer, reuse, threshold_layer
from .csim_cache import CSIM_CFLAGS, split_weights
from .model import check_model, hls_chain, hls_config, hls_names, layer_list
from .ops import lowering, source
from .project import HLSExportWarning, HLSProject

# every code that reaches C++ goes through a decimal literal parsed as a double
_MAX_EXACT_CODE = 2**53


def export(
    graph: Graph,
    output_dir,
    board: Mapping[str, Any] | None = None,
    part: str | None = None,
    clock_period: float | None = None,
    backend: str | None = None,
    io_type: str | None = None,
    strategy: str | None = None,
    reuse_factor: int | Mapping[str, int] | None = None,
    project_name: str = "myproject",
    force: bool = False,
    trace: bool = False,
    target: Target | None = None,
) -> HLSProject:
    """Write ``graph`` as an hls4ml project into ``output_dir``.

    What the project is built for is one :class:`~edgebnn.backends.target.Target`: pass it as
    ``target``, or give its options here (``board``, ``part``, ``clock_period``, ``backend``,
    ``io_type``, ``strategy``, ``reuse_factor``; not both).

    Args:
        graph: the deployment graph.
        output_dir: folder to create. An existing one is refused unless ``force``; the project
            is written into a temporary sibling folder and moved into place when complete.
        board: a board description with ``part`` and ``clock_period_ns`` (a dict or an
            ``edgebnn.boards`` entry); ``part`` / ``clock_period`` given here override it.
        part: FPGA part string, e.g. ``xc7z020clg400-1``.
        clock_period: target clock period in ns.
        backend: ``Vitis`` (default) or ``Vivado``.
        io_type: ``io_parallel`` (arrays, default) or ``io_stream`` (hls::stream of pixels;
            convolutions compile much faster there).
        strategy: ``Latency`` (default) or ``Resource``.
        reuse_factor: hls4ml reuse factor for every layer (default 1), or a mapping from dense and
            conv2d node names to theirs (the others get 1). Under the Resource strategy one that
            hls4ml would not build as given (it would snap it) is refused, naming the valid ones.
        project_name: the HLS top function / project name (a C identifier).
        force: replace an existing ``output_dir``, only after the new project is complete.
        trace: compile hls4ml's per-layer tracing into the C-simulation (``HLSProject.trace``
            does this on a temporary twin; the default keeps the project as plain as possible).
        target: the whole target as one value, instead of the options above.

    Returns:
        an :class:`HLSProject`; call ``.predict(x)`` to run the C-simulation.
    """
    target = make_target(
        target,
        board=board,
        part=part,
        clock_period_ns=clock_period,
        backend=backend,
        io_type=io_type,
        strategy=strategy,
        reuse_factor=reuse_factor,
    )
    if isinstance(target.board, Board):
        require_hls4ml(target.board)  # an iCE40 or ECP5 board has no Xilinx part for hls4ml
    if (
        not isinstance(project_name, str)
        or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", project_name)
        or keyword.iskeyword(project_name)
    ):
        raise EdgebnnError(f"project_name {project_name!r} must be a C identifier (letters, digits, underscores)")
    final = check_output_path(output_dir)
    check_graph(graph, target.io_type)
    reuse.check(target, reuse.matrices(graph), graph.name)  # every reuse factor is built as given

    chain, names, layers = _hls_layers(graph, target)
    messages: list[str] = []
    with staged_dir(final, force=force, what="HLS project folder") as tmp:
        config = hls_config(chain, names, str(tmp), project_name, target, trace)
        out = io.StringIO()
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
            warnings.simplefilter("always")
            model = ModelGraph.from_layer_list(config, layers, [names[chain.input.name]], [names[chain.output.name]])
            messages += check_model(model, chain, names, target)
            model.write()
        _build_at_o1(tmp / "build_lib.sh")
        split_weights(tmp, project_name)
        # hls4ml's pointwise pass rebuilds a 1x1 Conv2D from the configuration (strategy 'Resource')
        # and then restores the lower-case strategy its templates need: nothing the user must know
        messages += [
            f"hls4ml: {w.message}"
            for w in caught
            if not re.match(r"Overriding attribute 'strategy' of layer '\w+' \(PointwiseConv2D\)", str(w.message))
        ]
        messages += _printed_warnings(out.getvalue())
        if graph.output.type.width > 53:
            messages.append(
                f"the output type {graph.output.type} is wider than 53 bits, so predict() (float64) "
                "cannot return every output value exactly; the HLS project itself is exact"
            )
    model.config.config["OutputDir"] = str(final)
    for msg in messages:
        warnings.warn(msg, HLSExportWarning, stacklevel=2)
    return HLSProject(str(final), model, graph, messages, dict(target=target, project_name=project_name), export=export)


def _hls_layers(graph: Graph, target: Target):
    """edgebnn's hls4ml layers registered, and the node chain, hls4ml names and layer list hls4ml
    builds its model from (what export writes and open_project rebuilds)."""
    threshold_layer.register(BACKENDS)
    pad_layer.register(BACKENDS)
    pool_layer.register(BACKENDS)
    chain = hls_chain(graph, target.io_type)
    names = hls_names(graph, chain)
    return chain, names, layer_list(chain, names)


# hls4ml 1.3.0's build_lib.sh picks the C++ standard (C++23 where g++ has it, else C++11)
_STANDARD_BLOCK = re.compile(r"^# Include -std=c\+\+23 .*?\n(?:.*\n)*?fi\n\n?", flags=re.M)


def _build_at_o1(script: pathlib.Path) -> None:
    """Give hls4ml's ``build_lib.sh`` the flags :data:`~.csim_cache.CSIM_CFLAGS` (its standard
    among them, in place of the script's own choice)."""
    text = script.read_text()
    line = re.search(r'^CFLAGS="[^"]*"$', text, flags=re.M)
    block = _STANDARD_BLOCK.search(text)
    if line is None or block is None or block.start() < line.end():
        raise RuntimeError(
            f"hls4ml's {script.name} has no CFLAGS line or C++ standard choice to set (an hls4ml other than the pinned 1.3.0?)"
        )
    text = text[: line.start()] + f'CFLAGS="{CSIM_CFLAGS}"' + text[line.end() : block.start()] + text[block.end() :]
    script.write_text(text)


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
        names = ", ".join({'"': "a double quote", "\\": "a backslash"}.get(c, f"the control character {c!r}") for c in bad)
        shown = repr(text) if any(ord(c) < 32 or ord(c) == 127 for c in bad) else f"'{text}'"
        raise EdgebnnError(
            f"HLS project folder {shown} contains {names}, which hls4ml's C-simulation build cannot "
            "handle; choose a folder path without it"
        )
    return final


# the ops whose refusals depend on the graph's structure and the io type only, not on types the
# weights decide (an accumulator's width): what a run checks on the untrained model (all of
# them io_stream's)
STRUCTURAL = ("affine", "reshape", "add", "concatenate")


def check_graph(graph: Graph, io_type: str = "io_parallel", structure_only: bool = False) -> None:
    """Refuse anything this exporter cannot reproduce bit for bit, with one sentence each: an op
    without a lowering, each op's own refusals (its lowering's ``check``), a stream read by more
    than seven nodes in io_stream (hls4ml's Clone) and codes too wide for the decimal literals
    hls4ml writes. ``structure_only``: only the refusals that the trained weights cannot change
    (:data:`STRUCTURAL` ops and the stream readers), for a graph of an untrained model."""
    for node in graph.nodes:
        where = f"graph node {node.name!r} ({node.op})"
        op = lowering(node)
        if not structure_only or node.op in STRUCTURAL:
            op.check(node, source(op, graph, node), io_type, where)
        # a node read twice by a merge of three or more inputs is read by two of its two-input merges
        readers = sum(n.inputs.count(node.name) for n in graph.nodes)
        if io_type == "io_stream" and readers > 7:
            raise EdgebnnError(
                f"{where} is read by {readers} nodes, but hls4ml's io_stream copies a stream to at most 7 readers; "
                "use io_parallel or fewer branches from one tensor"
            )
        for key in ("weight", "bias", "thresholds", "levels") if not structure_only else ():
            if key in node.params and np.abs(node.params[key]).max(initial=0) >= _MAX_EXACT_CODE:
                raise EdgebnnError(
                    f"{where}: its {key} codes need more than 53 bits, which hls4ml cannot write exactly; use narrower types"
                )


def _printed_warnings(text: str) -> list[str]:
    """hls4ml's printed ``WARNING: ...`` messages (continuation lines joined), except the
    reuse-factor one, which check_model words for the user, and the final-Reshape one."""
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
    # the final-Reshape one is expected: check_model accounts for the removed no-op
    return [f"hls4ml: {' '.join(m)}" for m in messages if "ReuseFactor" not in m[0] and "Final layer is a Reshape" not in m[0]]


def open_project(path, graph: Graph, target: Target, project_name: str = "myproject") -> HLSProject:
    """The :class:`HLSProject` of a project that :func:`export` wrote into ``path`` earlier (for
    ``graph`` and ``target``), without writing it again: hls4ml's model is rebuilt in memory from
    the same graph and target, as export built it, and bound to the folder's build stamp, so
    ``compile`` and ``predict`` use the project on disk (``edgebnn csim`` on a run folder).

    The caller checks that the folder is the one exported from this graph (a run folder records its
    content key); a folder that is not an hls4ml project of this name is refused here."""
    final = check_output_path(path)
    script = final / "build_lib.sh"
    try:
        stamp = re.search(r"(?m)^LIB_STAMP=(\S+)$", script.read_text())
    except OSError:
        stamp = None
    if stamp is None or not (final / f"{project_name}_bridge.cpp").is_file():
        raise EdgebnnError(
            f"HLS project folder {str(final)!r} is not a complete project exported by edgebnn (no build_lib.sh with its "
            "stamp, or no bridge); export the graph again"
        )
    chain, names, layers = _hls_layers(graph, target)
    config = hls_config(chain, names, str(final), project_name, target, False)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        model = ModelGraph.from_layer_list(config, layers, [names[chain.input.name]], [names[chain.output.name]])
    model.config.config["Stamp"] = stamp.group(1)
    model.config.config["OutputDir"] = str(final)
    return HLSProject(str(final), model, graph, [], dict(target=target, project_name=project_name), export=export)
