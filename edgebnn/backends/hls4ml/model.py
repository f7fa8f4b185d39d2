"""The hls4ml model built from a deployment graph, and its check after hls4ml's flows.

- :func:`hls_chain`: the nodes hls4ml gets (a 1-D pool over its whole input that is flattened
  is marked as hls4ml's ``GlobalPooling1D``; io_stream runs elementwise ops before a flatten; a
  merge of more than two inputs is a chain of two-input merges; an affine node that changes
  nothing is left out);
- :func:`hls_names`: C-identifier layer names;
- :func:`hls_config` and :func:`layer_list`: the configuration (every precision explicit) and the
  layer list (every input of a node), each op's part from its lowering module (``ops``);
- :func:`check_model`: hls4ml's model after its flows against the graph: layers (with the
  ``Clone`` io_stream inserts after a node read twice), every type, every weight; anything that
  would break bit-exactness raises.
"""

from __future__ import annotations

import dataclasses
import keyword
import re

from hls4ml.backends import get_backend

from ...graph import Graph, Node
from ...graph.node import Nodes
from ..target import Target
from .ops import affine, flatten, lowering, source
from .ops._merge import merge_steps
from .ops._pooling import GLOBAL, global1d
from .ops.common import check_packing, expect_precision, precision


@dataclasses.dataclass
class Chain(Nodes):
    """The graph's nodes in the order and shapes hls4ml is given them (see :func:`hls_chain`)."""

    nodes: list[Node]
    moved: frozenset[str] = frozenset()  # flatten nodes moved behind the requantizations after them

    def source(self, node: Node) -> Node | None:
        """The (first) node ``node`` reads, None for the input."""
        return self[node.inputs[0]] if node.inputs else None


def hls_chain(graph: Graph, io_type: str) -> Chain:
    """The nodes hls4ml gets: the graph's, except that in io_stream a requantization (an
    ``ELEMENTWISE`` op: threshold, cast) that is the only reader of a flatten is applied before
    the flatten.

    hls4ml's io_stream flatten is a view of the pixel stream (packets of one pixel's channels)
    that only a dense layer knows how to read; an activation after it writes packets of the whole
    flat size while reading pixel packets, so it reads too little and leaves data in the stream.
    An elementwise op commutes with flatten (channels-last row-major order is the stream's pixel
    order), so each moved node keeps its per-flat-feature tables and sees the pixel packets, and
    the flatten (or flattens) follow it with the last moved node's type; the nodes that read the
    last moved node read the flatten instead. A flatten read by several nodes stays in place.

    In both io types a merge (``MULTI_INPUT``) of more than two inputs is replaced by the chain of
    two-input merges hls4ml can build (``ops._merge.merge_steps``), its partial results first, and
    an affine node that changes nothing (``affine.is_identity``: a float bias of zeros) is left
    out, its readers reading its input (hls4ml would fuse it away).
    """
    graph = Chain(_global_pools(graph, _without_identities(graph)))
    if io_type != "io_stream":
        return _split_merges(list(graph.nodes), io_type)
    readers = {n.name: len(graph.readers(n)) for n in graph.nodes}
    nodes: list[Node] = []
    holder: dict[str, str] = {}  # graph node name -> the chain node that holds its value
    pending: list[Node] = []  # flattens not yet emitted, each read only by the next
    src = tail = ""  # the chain node the pending flattens will read; the graph node they stand for
    moved: set[str] = set()

    def emit_pending():
        nonlocal src
        for flat in pending:
            before = next(n for n in reversed(nodes) if n.name == src)
            nodes.append(dataclasses.replace(flat, inputs=[src], type=before.type))
            src = flat.name
        holder[tail] = src
        pending.clear()

    for node in graph.nodes:
        op = lowering(node)
        follows = bool(pending) and node.inputs == [tail] and readers[tail] == 1
        if pending and not follows:
            emit_pending()
        if op is flatten and readers[node.name] <= 1:
            if not pending:
                src = holder.get(node.inputs[0], node.inputs[0])
            pending.append(node)
            tail = node.name
        elif follows and op.ELEMENTWISE:
            prev = next(n for n in reversed(nodes) if n.name == src)
            nodes.append(dataclasses.replace(node, inputs=[src], shape=prev.shape))
            moved.update(f.name for f in pending)
            src = tail = node.name
        else:
            if pending:
                emit_pending()
            nodes.append(dataclasses.replace(node, inputs=[holder.get(i, i) for i in node.inputs]))
    if pending:
        emit_pending()
    return _split_merges(nodes, io_type, frozenset(moved))


def _without_identities(graph) -> list[Node]:
    """The graph's nodes without its identity affine nodes, each reader reading what one read."""
    held: dict[str, str] = {}  # a left-out node -> the node holding its value
    nodes: list[Node] = []
    for node in graph.nodes:
        inputs = [held.get(i, i) for i in node.inputs]
        if node.op == "affine" and affine.is_identity(node, graph[node.inputs[0]]):
            held[node.name] = inputs[0]
        else:
            nodes.append(node if inputs == node.inputs else dataclasses.replace(node, inputs=inputs))
    return nodes


def _global_pools(graph, nodes: list[Node]) -> list[Node]:
    """``nodes`` with each 1-D pool that hls4ml builds as ``GlobalPooling1D`` (``_pooling.global1d``:
    a window of its whole input, read only by flattens) marked with the attr ``_pooling.GLOBAL``."""
    chain = Chain(nodes)
    out = []
    for node in nodes:
        srcs = chain.sources(node)
        if srcs and global1d(node, srcs[0], chain.readers(node)):
            node = dataclasses.replace(node, attrs={**node.attrs, GLOBAL: True})
        out.append(node)
    return out


def _split_merges(nodes: list[Node], io_type: str, moved: frozenset[str] = frozenset()) -> Chain:
    """The chain of ``nodes`` with each merge of more than two inputs replaced by its two-input merges."""
    chain = Chain(nodes, moved)
    taken = {n.name for n in nodes}
    split: list[Node] = []
    for node in nodes:
        if getattr(lowering(node), "MULTI_INPUT", False):
            steps = merge_steps(node, chain.sources(node), io_type, taken)
            taken.update(n.name for n in steps)
            split += steps
        else:
            split.append(node)
    return Chain(split, moved)


def _clone(name: str) -> str:
    """The name of the ``Clone`` layer hls4ml's io_stream inserts after layer ``name`` when several read it."""
    return f"clone_{name}"


def hls_names(graph: Graph, chain: Chain | None = None) -> dict[str, str]:
    """Graph node name -> a C-identifier layer name hls4ml accepts ('input' is reserved); with
    ``chain``, also the names of its nodes the graph does not have (a merge's partial results),
    after the graph's, so a graph node's name does not depend on the chain."""
    names: dict[str, str] = {}
    used: set[str] = set()
    in_graph = {n.name for n in graph.nodes}
    extra = [n for n in chain.nodes if n.name not in in_graph] if chain is not None else []
    for node in [*graph.nodes, *extra]:
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


def hls_config(chain: Chain, names, output_dir, project_name, target: Target, trace=False) -> dict:
    """hls4ml's configuration of the project: the target, writer options, and per layer its
    precisions, reuse factor, strategy and tracing."""
    backend, strategy = target.backend, target.strategy
    kwargs = {"io_type": target.io_type}
    if target.device_part is not None:
        kwargs["part"] = target.device_part
    if target.clock_ns is not None:
        kwargs["clock_period"] = target.clock_ns
    config = get_backend(backend).create_initial_config(**kwargs)
    config.update(OutputDir=output_dir, ProjectName=project_name, Backend=backend, InputData=None, OutputPredictions=None)
    config["WriterConfig"]["WriteTar"] = False
    # weights compiled into the C-simulation library (as for synthesis) instead of read at its
    # first call from a folder path built into it: the library then works wherever the folder
    # is moved (export stages it elsewhere first), and a path never decides what C++ reads
    config["WriterConfig"]["WriteWeightsTxt"] = False
    layer_cfg = {}
    for node in chain.nodes:
        op = lowering(node)
        cfg = {
            "Precision": op.precisions(node, source(op, chain, node)),
            "ReuseFactor": op.reuse_factor(node, get_backend(backend), strategy, target.reuse_factor_of(node.name)),
            "Strategy": strategy,
            "Trace": trace,
        }
        for name in op.config_names(names[node.name], node is chain.output):
            layer_cfg[name] = cfg
        if target.io_type == "io_stream" and len(chain.readers(node)) > 1:  # the Clone hls4ml adds copies its type
            layer_cfg[_clone(names[node.name])] = {"Precision": {"result": precision(node.type)}}
    config["HLSConfig"] = {
        # no model-wide default precision: a layer hls4ml might add without one fails loudly
        "Model": {"ReuseFactor": target.model_reuse_factor, "Strategy": strategy, "BitExact": False},
        "LayerName": layer_cfg,
    }
    return config


def layer_list(chain: Chain, names: dict[str, str]) -> list[dict]:
    """The layer list hls4ml's ``ModelGraph.from_layer_list`` takes, one entry per node."""
    layers = []
    for node in chain.nodes:
        op = lowering(node)
        entry = {"name": names[node.name]}
        if node.inputs:
            entry["inputs"] = [names[i] for i in node.inputs]
        entry.update(op.layer(node, source(op, chain, node)))
        layers.append(entry)
    return layers


def check_model(model, chain: Chain, names: dict[str, str], target: Target) -> list[str]:
    """Compare the hls4ml model after its flows with the graph; returns warnings, raises on
    anything that would break bit-exactness."""
    backend = model.config.backend
    layers = list(model.get_layers())
    io_type = model.config.get_config_value("IOType")
    # (hls4ml layer name, class, graph node whose output type the layer's result must have)
    expected = []
    for n in chain.nodes:
        op = lowering(n)
        expected += op.hls_layers(n, source(op, chain, n), names[n.name], io_type, n is chain.output)
        if io_type == "io_stream" and len(chain.readers(n)) > 1:  # hls4ml copies a stream read twice
            expected.append((_clone(names[n.name]), "Clone", n))
    want = [(name, cls) for name, cls, _ in expected]
    got = [(layer.name, layer.class_name) for layer in layers]
    # in a graph with branches hls4ml places a layer it inserts (ZeroPadding2D) right after the
    # layer it reads, so only the set of layers is fixed, not their order
    branching = any(len(chain.readers(n)) > 1 for n in chain.nodes)
    if (sorted(got) != sorted(want)) if branching else (got != want):
        raise RuntimeError(
            f"hls4ml rewrote the layer list to {got} (expected {want}); the project would not be "
            "bit-exact, please report this to edgebnn"
        )
    by_name = {layer.name: layer for layer in layers}
    messages = []
    for name, _, node in expected:
        layer = by_name[name]
        expect_precision(backend, layer, "result", layer.get_output_variable().type.precision, precision(node.type))
        if name != names[node.name]:  # a layer hls4ml added for the node (ZeroPadding2D, Repack, Clone)
            continue
        op = lowering(node)
        if io_type == "io_stream" and op.ELEMENTWISE:
            check_packing(layer)
        messages += op.verify(layer, node, source(op, chain, node), backend, target.reuse_factor_of(node.name))
    return messages
