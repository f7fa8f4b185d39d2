"""The estimate of one graph on one board: the graph loaded and checked, its types and the
context that does not depend on the reuse factor prepared once (:func:`_prepare`), then each
node costed by its op's model (:func:`_estimate`). :mod:`edgebnn.estimate` exports
:func:`estimate`; :mod:`.fit` searches reuse factors through the same steps."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from edgebnn.backends.hls4ml.cost import (
    COSTS,
    KNOWN_OPS,
    LIVE_READS,
    MULTI_INPUT,
    REFUSED,
    STREAM_ALIAS_READERS,
    STREAMS_WHOLE_VECTOR,
    WEIGHTED_OPS,
)
from edgebnn.backends.hls4ml.cost import softmax as _softmax
from edgebnn.backends.hls4ml.cost.blocks import (
    _cap_dsp,
    _channel_nodes,
    _channels,
    _clone,
    _dataflow,
    _live_outputs,
    _longest_path,
    _stream,
)
from edgebnn.backends.hls4ml.cost.context import (
    CONSTANTS,
    MULTIPLIERS,
    SOFTMAX_IMPLEMENTATIONS,
    EstimateError,
    ModelConstants,
    _Context,
)
from edgebnn.backends.hls4ml.ops._pooling import GLOBAL, global1d
from edgebnn.backends.target import Target, make_target
from edgebnn.boards import load_board, require_hls4ml
from edgebnn.fixed import FixedType
from edgebnn.graph import Graph

from .report import Estimate

_TYPE_KEYS = ("accum", "result", "weight")


def estimate(
    graph,
    board=None,
    strategy: str | None = None,
    reuse_factor=None,
    io_type: str | None = None,
    clock_period: float | None = None,
    utilization_limit: float = 0.8,
    constants: ModelConstants = CONSTANTS,
    types: Mapping | None = None,
    multipliers: str = "auto",
    hls_tool: str | None = None,
    softmax=None,
    softmax_implementation: str = "stable",
    target: Target | None = None,
) -> Estimate:
    """Estimate resources and latency of ``graph`` on ``board``.

    What the design is built for is one :class:`~edgebnn.backends.target.Target`: pass it as
    ``target``, or give its options here (``strategy``, ``reuse_factor``, ``io_type``,
    ``clock_period``, ``hls_tool``; not both). ``board`` is the device estimated on (default:
    the target's board); it supplies the clock where the target gives none.

    Args:
        graph: a :class:`~edgebnn.graph.Graph` or the path of a saved graph.
        board: a :class:`~edgebnn.boards.Board`, a board name (``"pynq-z2"``) or a ``.yaml`` path.
        strategy: hls4ml's ``"Latency"`` (default) or ``"Resource"`` (any letter case).
        reuse_factor: an integer >= 1 for every dense node (default 1), or a mapping node name ->
            integer (dense nodes not named get 1).
        io_type: ``"io_parallel"`` (default) or ``"io_stream"``.
        clock_period: clock period in ns; the board's ``clock_period_ns`` when None.
        utilization_limit: ``fits`` requires every resource at or below this fraction (0, 1].
        constants: the model's constants (:data:`CONSTANTS`), replaceable for calibration.
        types: types the design is built with where they differ from the graph's, e.g.
            ``{"dense0": {"accum": "fixed<16,6>"}, "*": {"result": "fixed<16,6>"}}`` (``"*"``
            applies to every node it fits). Keys: ``accum`` (a dense node's adder width; its
            products are truncated to it, as hls4ml casts them to ``accum_t``), ``result`` (the
            width the next node reads; a dense node's defaults to its ``accum``), ``weight`` (the
            declared weight width, used where weights are not constants). An hls4ml design built
            with its default ``ap_fixed<16,6>`` is ``{"*": {"accum": "fixed<16,6>", "result": ...}}``.
        multipliers: ``"auto"`` (Vivado/Vitis choose DSP or LUTs by operand widths), ``"dsp"``
            or ``"lut"`` (the build forces every real multiplier into DSPs or into fabric, as
            ``config_op mul -impl dsp|fabric`` does).
        hls_tool: the HLS tool whose scheduler sets the latency: ``"vitis_hls"`` (Vitis HLS
            2020.2 and later) or ``"vivado_hls"`` (Vivado HLS up to 2020.1); names such as
            ``"Vivado HLS 2019.2"`` are accepted (see ``ModelConstants.timing_ns``). Default: the
            tool of the target's backend (Vitis, so ``"vitis_hls"``, unless the target says Vivado).
        softmax: add hls4ml's softmax after the graph's output: ``None`` (default) when the
            graph was frozen with ``strip_softmax=True`` (``graph.meta["stripped_softmax"]``),
            ``False`` never, ``True`` always (over the output's last axis).
        softmax_implementation: hls4ml's ``"stable"`` (its default) or ``"latency"``.
        target: the whole target as one value, instead of the options above.
    """
    graph = _load(graph)
    target = make_target(
        target, strategy=strategy, reuse_factor=reuse_factor, io_type=io_type, clock_period_ns=clock_period, hls_tool=hls_tool
    )
    graph, target, ctx, widths = _prepare(
        graph, board, target, utilization_limit, constants, types, multipliers, softmax, softmax_implementation
    )
    return _estimate(graph, target, ctx, widths, utilization_limit, softmax, softmax_implementation)


def _load(graph) -> Graph:
    """``graph``, read from its file when it is a path; anything but a graph is refused."""
    if isinstance(graph, (str, os.PathLike)):
        graph = Graph.load(graph)
    if not isinstance(graph, Graph):
        raise EstimateError(f"estimate needs a deployment graph or its file path, got {type(graph).__name__}")
    return graph


def _prepare(graph, board, target: Target, utilization_limit, constants, types, multipliers, softmax, softmax_implementation):
    """The checked options of :func:`estimate` (``target`` already made from its options): the
    graph, the target on its board, the build (:class:`_Context`, with a fresh memo) and the
    resolved widths. ``fit`` prepares once and estimates every candidate reuse factor with
    :func:`_estimate` on the same build."""
    graph = _load(graph)
    if board is None:
        board = target.board
    if board is None:
        raise EstimateError(
            "estimate needs a board: give board= (a name such as 'pynq-z2', a .yaml path or an "
            "edgebnn.boards.Board) or a target with one"
        )
    board = require_hls4ml(load_board(board))
    if target.board is not board:
        target = target.replace(board=board)
    if isinstance(utilization_limit, bool) or not isinstance(utilization_limit, (int, float)) or not 0 < utilization_limit <= 1:
        raise EstimateError(f"utilization_limit must be a fraction in (0, 1], got {utilization_limit!r}")
    target.reuse_factors(graph)  # a per-node reuse factor naming no weighted node is refused
    if multipliers not in MULTIPLIERS:
        raise EstimateError(f"unknown multipliers {multipliers!r}; use one of {', '.join(MULTIPLIERS)}")
    widths = _resolve_types(graph, types)
    if softmax_implementation not in SOFTMAX_IMPLEMENTATIONS:
        raise EstimateError(
            f"unknown softmax_implementation {softmax_implementation!r}; use one of {', '.join(SOFTMAX_IMPLEMENTATIONS)}"
        )
    if softmax not in (None, True, False):
        raise EstimateError(f"softmax must be None (from the graph), True or False, got {softmax!r}")
    ctx = _Context(board, target.strategy, target.io_type, float(target.clock_ns), constants, multipliers, target.tool)
    return graph, target, ctx, widths


def _estimate(graph: Graph, target: Target, ctx: _Context, widths, utilization_limit, softmax, softmax_implementation):
    """The estimate of ``graph`` built as ``target`` (its board is ``ctx.board``), on the build
    ``ctx`` that :func:`_prepare` made for it; what does not depend on the reuse factor is
    kept in ``ctx.memo`` for the next call on the same build (the live outputs, the rows of the
    nodes whose reuse factor and live outputs are the same, the dense weight statistics)."""
    board, strategy, io_type = ctx.board, ctx.strategy, ctx.io_type
    rf_of = target.reuse_factors(graph)
    in_memory = frozenset(name for name, rf in rf_of.items() if strategy == "Resource" and rf > 1)
    live = ctx.memoized(("live", in_memory), lambda: _live_outputs(graph, strategy, rf_of, LIVE_READS))
    add_softmax = bool(softmax or (softmax is None and graph.meta.get("stripped_softmax")))
    # io_parallel designs hls4ml makes a DATAFLOW region: a channel per element between layers
    dataflow = io_type == "io_parallel" and ctx.memoized(("dataflow",), lambda: _dataflow(graph, strategy))
    channels = ctx.memoized(("channels", add_softmax), lambda: _channel_nodes(graph, add_softmax)) if dataflow else frozenset()
    rows, warnings = [], []
    for node in graph.compute_nodes():
        if node.op in REFUSED:
            raise EstimateError(f"graph node {node.name!r}: estimate cannot cost op {node.op!r}: {REFUSED[node.op]}")
        if node.op not in COSTS:
            raise EstimateError(
                f"graph node {node.name!r}: estimate does not know op {node.op!r} yet; it models "
                f"{', '.join(KNOWN_OPS)} (update edgebnn or estimate a graph without this node)"
            )
        rf, mask = rf_of.get(node.name, 1), live.get(node.name)
        key = ("row", node.name, rf, None if mask is None else mask.tobytes())

        def row_of(node=node, rf=rf, mask=mask):
            srcs = graph.sources(node)
            src = srcs if node.op in MULTI_INPUT else srcs[0]
            if global1d(node, srcs[0], graph.readers(node)):  # hls4ml's GlobalPooling1D, as export builds it
                node = dataclasses.replace(node, attrs={**node.attrs, GLOBAL: True})
            said: list[str] = []
            row = COSTS[node.op](node, src, rf, ctx, widths, said, mask)
            if dataflow:
                row = _channels(row, node, src, ctx, widths, own=node.name in channels)
            readers = graph.readers(node)
            if io_type == "io_stream" and readers and all(r.op in STREAM_ALIAS_READERS.get(node.op, ()) for r in readers):
                # hls4ml writes `auto& out = in;`: its readers take its input's stream
                return dataclasses.replace(row, latency=0, ii=1, detail={**row.detail, "stream_alias": True}), tuple(said)
            return _stream(row, node, ctx, widths, whole_vector=node.op in STREAMS_WHOLE_VECTOR), tuple(said)

        row, said = ctx.memoized(key, row_of)
        rows.append(row)
        warnings.extend(said)
        copies = sum(n.inputs.count(node.name) for n in graph.nodes)  # a merge of 3+ inputs may read it twice
        if io_type == "io_stream" and copies > 1:  # hls4ml's Clone copies the stream for each reader
            rows.append(_clone(node, copies, ctx, widths))
    if add_softmax:
        # hls4ml gives the softmax the model's reuse factor (1 where it is set per node)
        model_rf = target.reuse_factor if isinstance(target.reuse_factor, int) else 1
        row = _softmax.cost(graph.compute_nodes()[-1], ctx, widths, softmax_implementation, model_rf)
        rows.append(_stream(row, None, ctx, widths, bits=row.detail["n"] * row.detail["input_bits"]))
    dsp_needed = sum(r.dsp for r in rows)
    rows = _cap_dsp(rows, board, warnings)
    rf_shown = dict(target.reuse_factor) if isinstance(target.reuse_factor, Mapping) else target.reuse_factor
    branching = any(len(graph.readers(n)) > 1 for n in graph.nodes)
    path = _longest_path(graph, rows) if branching else ()
    est = Estimate(
        graph.name,
        board,
        strategy,
        rf_shown,
        io_type,
        float(ctx.clock),
        float(utilization_limit),
        tuple(rows),
        tuple(warnings),
        dsp_needed,
        ctx.hls_tool,
        path,
    )
    return est


def _resolve_types(graph: Graph, types) -> dict[str, dict[str, FixedType]]:
    """Node name -> {"accum"/"result"/"weight": FixedType} as the design is built."""
    out: dict[str, dict[str, FixedType]] = {n.name: {} for n in graph.nodes}
    if types is None:
        types = {}
    if not isinstance(types, Mapping):
        raise EstimateError(f"types must map node names (or '*') to {{'accum'|'result'|'weight': type}}, got {types!r}")
    for name in types:
        if name != "*" and name not in out:
            raise EstimateError(
                f"types names node {name!r}, which graph {graph.name!r} does not have; its nodes are {', '.join(out)}"
            )
    for node in graph.nodes:
        for key in ("*", node.name):
            spec = types.get(key) or {}
            if not isinstance(spec, Mapping):
                raise EstimateError(f"types[{key!r}] must be a mapping like {{'accum': 'fixed<16,6>'}}, got {spec!r}")
            for what, value in spec.items():
                if what not in _TYPE_KEYS:
                    raise EstimateError(f"types[{key!r}] has key {what!r}; use {', '.join(_TYPE_KEYS)}")
                if what in ("accum", "weight") and node.op not in WEIGHTED_OPS:
                    if key == "*":
                        continue
                    raise EstimateError(
                        f"types[{key!r}][{what!r}]: node {node.name!r} is a {node.op} node, "
                        f"only dense and conv2d nodes have an {what} type"
                    )
                try:
                    out[node.name][what] = value if isinstance(value, FixedType) else FixedType.from_string(value)
                except (ValueError, TypeError) as err:
                    raise EstimateError(f"types[{key!r}][{what!r}] = {value!r} is not a fixed-point type ({err})") from None
    for node in graph.nodes:
        t = out[node.name]
        if node.op in WEIGHTED_OPS:
            t.setdefault("accum", node.type)
            t.setdefault("weight", node.fixed_attr("weight_type"))
            t.setdefault("result", t["accum"] if t["accum"] is not node.type else node.type)
        t.setdefault("result", node.type)
    return out
