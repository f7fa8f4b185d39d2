"""``export()``: write a deployment graph as a streaming RTL design, all or nothing.

The graph and the options are checked first (each op's part in its lowering's ``check``, the
folding in ``folding``), then every node's unit is generated, the top module wires them (forks
through FIFOs), and the project folder is written staged and moved into place:

``hdl/edgebnn_lib.v``   the stream primitives (skid buffer, FIFO)
``hdl/<node>.v``        one file per node: its unit, named after the node
``hdl/<top>.v``         the top: ``s_axis_*`` in, ``m_axis_*`` out, the units in graph order
``hdl/*.mem``           the weight ROMs (``$readmemh``, read relative to the working folder: run
                        simulators and synthesis in ``hdl/``)
``sim/``                the Verilator batch harness and its ``design.h``
``graph.npz``           the graph the design was built from (inputs are quantized by it)
``project.json``        top, sources in order, folding, per node its Verilog name and cycles
"""

from __future__ import annotations

import json
import math
import pathlib
import shutil
from collections.abc import Mapping

from ...errors import EdgebnnError
from ...graph import Graph
from ...outputs import staged_dir
from . import folding as folding_mod
from .hdl import LIBRARY, beats, header, ident, lanes
from .ops import LOWERINGS, fused_reader, lowering
from .ops._units import wiring
from .project import PROJECT_FILE, RTLProject

# codes travel between the simulation and Python as 64-bit integers
MAX_WIDTH = 63
_SIM = pathlib.Path(__file__).parent / "sim"


def check(graph: Graph, folding: Mapping | None = None) -> dict[str, tuple[int, int]]:
    """Refuse, in one sentence naming the node, what the RTL backend cannot build bit for bit;
    returns every folded node's (PE, SIMD)."""
    for node in graph.nodes:
        where = f"graph node {node.name!r} ({node.op})"
        module = lowering(node)
        if node.type.width > MAX_WIDTH:
            raise EdgebnnError(
                f"{where} has the {node.type.width}-bit type {node.type}; the RTL backend takes types of at most {MAX_WIDTH} bits"
            )
        module.check(node, graph.sources(node), where)
    return folding_mod.resolve(graph, folding)


def export(graph: Graph, output_dir, folding: Mapping | None = None, force: bool = False, top: str | None = None) -> RTLProject:
    """Write ``graph`` as an RTL project into ``output_dir`` (refused if it exists, unless
    ``force``); ``folding`` maps folded nodes to (PE, SIMD) (see ``folding``), ``top`` names
    the top module (default: from the graph's name)."""
    folds = check(graph, folding)
    taken: set[str] = {"edgebnn_skid", "edgebnn_fifo"}
    names = {n.name: ident(n.name, taken) for n in graph.nodes}
    top = ident(top or f"{graph.name}_top", taken)
    units, files, mems, cycles, fused = {}, {}, {}, {}, {}
    for node in graph.compute_nodes():
        srcs = graph.sources(node)
        if node.name in fused.values():  # its codes pass through: the MVAU it reads computes them
            src = srcs[0]
            unit = wiring(
                names[node.name],
                lanes(node) * node.type.width,
                header(f"{names[node.name]}: threshold, built into the unit of {names[src.name]}", ["its codes pass through"]),
            )
            units[node.name] = unit
            files[f"{names[node.name]}.v"] = "\n".join(unit.modules)
            cycles[node.name] = {"interval": 0, "note": f"built into {names[src.name]}"}
            continue
        module, unit = LOWERINGS[node.op], None
        then = fused_reader(graph, node)
        if then is not None:
            unit = module.unit(node, srcs, names[node.name], folds.get(node.name), then=then)
            if unit is not None:
                fused[node.name] = then.name
        if unit is None:
            unit = module.unit(node, srcs, names[node.name], folds.get(node.name))
        units[node.name] = unit
        files[f"{names[node.name]}.v"] = "\n".join(unit.modules)
        mems.update(unit.mems)
        cycles[node.name] = {"interval": unit.interval, "note": unit.cycles}
    files[f"{top}.v"] = top_module(graph, names, top, units, fused)
    design_h = design_header(graph, names)
    sources = ["hdl/edgebnn_lib.v", *(f"hdl/{n}" for n in files)]
    meta = {
        "format": "edgebnn-rtl",
        "version": 1,
        "graph": graph.name,
        "top": top,
        "sources": sources,
        "folding": {k: list(v) for k, v in folds.items()},
        "nodes": {n.name: names[n.name] for n in graph.nodes},
        "cycles": cycles,
        "fused": fused,
    }
    with staged_dir(output_dir, force=force, what="RTL project folder") as tmp:
        hdl = tmp / "hdl"
        hdl.mkdir()
        (hdl / "edgebnn_lib.v").write_text(LIBRARY)
        for name, text in files.items():
            (hdl / name).write_text(text)
        for name, text in mems.items():
            (hdl / name).write_text(text)
        sim = tmp / "sim"
        sim.mkdir()
        shutil.copyfile(_SIM / "harness.cpp", sim / "harness.cpp")
        (sim / "design.h").write_text(design_h)
        graph.save(tmp / "graph.npz")
        (tmp / PROJECT_FILE).write_text(json.dumps(meta, indent=1) + "\n")
    return RTLProject(output_dir)


def _edges(graph: Graph) -> dict[str, list[tuple[str, int]]]:
    """Per node, the (reader, input port) pairs that read it."""
    edges: dict[str, list[tuple[str, int]]] = {n.name: [] for n in graph.nodes}
    for node in graph.nodes:
        for i, name in enumerate(node.inputs):
            edges[name].append((node.name, i))
    return edges


def top_module(graph: Graph, names: dict[str, str], top: str, units, fused: dict[str, str] | None = None) -> str:
    """The top: ``s_axis`` is the input node's stream, ``m_axis`` the output node's; a node read
    more than once feeds each reader through a FIFO of a sample's beats (so a branch may run a
    whole sample ahead of the other without a deadlock at their join); with ``EDGEBNN_TAPS``
    defined (the simulation) every node's stream is a port ``tap_<node>_*`` too. ``fused`` maps
    an MVAU node to the threshold node built into its unit: that unit sends the threshold's
    stream, and the MVAU's own values exist only as the simulation's tap."""
    fused = fused or {}
    inp, outp = graph.input, graph.output
    in_bits = lanes(inp) * inp.type.width
    out_bits = lanes(outp) * outp.type.width
    taps = []
    for node in graph.compute_nodes():
        n, b = names[node.name], lanes(node) * node.type.width
        taps.append(f"  , output [{b - 1}:0] tap_{n}_data, output tap_{n}_valid, output tap_{n}_ready")
    total = sum(u.interval for u in units.values())
    slowest = max(units.items(), key=lambda kv: kv[1].interval)
    lines = [
        f"// {top}: the streaming dataflow design of graph {graph.name!r}, one unit per node.",
        f"//   s_axis: one beat per input position, {lanes(inp)} codes of {inp.type} ({in_bits} bits)",
        f"//   m_axis: one beat per output position, {lanes(outp)} codes of {outp.type} ({out_bits} bits)",
        f"//   the slowest unit, {slowest[0]}, takes about {slowest[1].interval} cycles per sample; the units' sum is {total}",
        f"module {top} (",
        "  input clk, input rst,",
        f"  input [{in_bits - 1}:0] s_axis_tdata, input s_axis_tvalid, output s_axis_tready,",
        f"  output [{out_bits - 1}:0] m_axis_tdata, output m_axis_tvalid, input m_axis_tready",
        "`ifdef EDGEBNN_TAPS",
        *taps,
        "`endif",
        ");",
    ]
    edges = _edges(graph)
    for node in graph.nodes:
        n, b = names[node.name], lanes(node) * node.type.width
        lines.append(f"  // {node.name} ({node.op}): {node.shape} of {node.type}")
        lines.append(f"  wire [{b - 1}:0] {n}_data;")
        lines.append(f"  wire {n}_valid, {n}_ready;")
    lines.append(f"  assign {names[inp.name]}_data = s_axis_tdata;")
    lines.append(f"  assign {names[inp.name]}_valid = s_axis_tvalid;")
    lines.append(f"  assign s_axis_tready = {names[inp.name]}_ready;")
    lines.append(f"  assign m_axis_tdata = {names[outp.name]}_data;")
    lines.append(f"  assign m_axis_tvalid = {names[outp.name]}_valid;")
    lines.append(f"  assign {names[outp.name]}_ready = m_axis_tready;")
    lines.append("`ifdef EDGEBNN_TAPS")
    for node in graph.compute_nodes():
        n = names[node.name]
        lines.append(f"  assign tap_{n}_data = {n}_data;")
        lines.append(f"  assign tap_{n}_valid = {n}_valid;")
        lines.append(f"  assign tap_{n}_ready = {n}_ready;")
    lines.append("`endif")
    # each edge's stream: the producer's own, or a FIFO of a fork
    stream = {}
    for node in graph.nodes:
        n, b = names[node.name], lanes(node) * node.type.width
        readers = edges[node.name]
        if node.name in fused:
            b = lanes(node) * graph[fused[node.name]].type.width
            lines.append(f"  wire [{b - 1}:0] {n}_fused_data;  // the codes of {fused[node.name]}")
            lines.append(f"  wire {n}_fused_valid, {n}_fused_ready;")
            stream[readers[0]] = f"{n}_fused"
            continue
        if len(readers) == 1:
            stream[readers[0]] = n
            continue
        if not readers:
            continue
        depth = beats(node) + 2
        aw = max(1, math.ceil(math.log2(depth)))
        branches = [f"{n}_to_{names[r]}_{i}" for r, i in readers]
        lines.append(f"  // {node.name} is read {len(readers)} times: a fork, each branch through a FIFO of {depth} beats")
        for br in branches:
            lines.append(f"  wire [{b - 1}:0] {br}_data;")
            lines.append(f"  wire {br}_valid, {br}_ready, {br}_in_ready;")
        lines.append(f"  assign {n}_ready = {' && '.join(f'{br}_in_ready' for br in branches)};")
        for (r, i), br in zip(readers, branches):
            stream[(r, i)] = br
            lines.append(f"  edgebnn_fifo #(.W({b}), .DEPTH({depth}), .AW({aw})) {br}_fifo (")
            lines.append(
                f"    .clk(clk), .rst(rst), .in_data({n}_data), .in_valid({n}_valid && {n}_ready), .in_ready({br}_in_ready),"
            )
            lines.append(f"    .out_data({br}_data), .out_valid({br}_valid), .out_ready({br}_ready)")
            lines.append("  );")
    for node in graph.compute_nodes():
        n = names[node.name]
        o = f"{n}_fused" if node.name in fused else n
        ports = ["    .clk(clk), .rst(rst),"]
        for i, _ in enumerate(node.inputs):
            s = stream[(node.name, i)]
            ports.append(f"    .in{i}_data({s}_data), .in{i}_valid({s}_valid), .in{i}_ready({s}_ready),")
        ports.append(f"    .out_data({o}_data), .out_valid({o}_valid), .out_ready({o}_ready)")
        if node.name in fused:
            lines.append(f"  // {node.name}, the threshold {fused[node.name]} built in: it sends that threshold's codes")
            lines.append("`ifdef EDGEBNN_TAPS")
            lines.append(f"  assign {n}_ready = 1'b1;")
            lines.append("`endif")
            ports += ["`ifdef EDGEBNN_TAPS", f"    , .tap_data({n}_data), .tap_valid({n}_valid)", "`endif"]
        lines.append(f"  {n} u_{n} (")
        lines += ports
        lines.append("  );")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def _stream(node) -> str:
    return f"{{{lanes(node)}, {node.type.width}, {int(node.type.signed)}, {beats(node)}}}"


def design_header(graph: Graph, names: dict[str, str]) -> str:
    """``design.h`` of the harness: the top class, how the top's streams and every tap pack codes."""
    nodes = graph.compute_nodes()
    lines = [
        "// The design's streams, for harness.cpp (written by edgebnn's RTL export).",
        '#include "Vtop.h"',
        "typedef Vtop Top;",
        f"static const Stream IN = {_stream(graph.input)};",
        f"static const Stream OUT = {_stream(graph.output)};",
        f"static const int N_TAPS = {len(nodes)};",
        f"static const Stream TAPS[] = {{{', '.join(_stream(n) for n in nodes)}}};",
        "static inline bool tap_fire(Top* t, int i) {",
        "  switch (i) {",
    ]
    for i, node in enumerate(nodes):
        n = names[node.name]
        lines.append(f"    case {i}: return t->tap_{n}_valid && t->tap_{n}_ready;  // {node.name}")
    lines += ["  }", "  return false;", "}", "static inline void tap_read(Top* t, int i, int64_t* codes) {", "  switch (i) {"]
    for i, node in enumerate(nodes):
        n = names[node.name]
        lines.append(f"    case {i}: get_beat(t->tap_{n}_data, codes, TAPS[{i}]); break;")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"
