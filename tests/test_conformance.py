"""Every graph op x every consumer: the emulator executes it, each backend lowers it and costs it,
or refuses it explicitly with a reason. A new op in edgebnn.graph.ops fails here until every
consumer handles or refuses it, and until one of tests/graphs.py's OP_GRAPHS holds it.

Consumers today: the emulator (graph/ops/<op>.py ``execute``), the hls4ml export
(backends/hls4ml/ops/<op>.py), the hls4ml cost model (backends/hls4ml/cost/<op>.py) and the RTL
export (backends/rtl/ops/<op>.py; its simulation of every example graph is in test_rtl_ops.py)."""

import inspect

import numpy as np
import pytest
from graphs import OP_GRAPHS, PYNQ, assert_csim_equals_emulator, edge_inputs, export_quietly

from edgebnn.backends.hls4ml import cost, ops
from edgebnn.emulate import emulate
from edgebnn.estimate import estimate
from edgebnn.graph import OPS, REGISTRY

GRAPHS = {name: build() for name, build in OP_GRAPHS.items()}


def _graph_of(op: str):
    """The first example graph that holds a node of ``op``."""
    return next(g for g in GRAPHS.values() if any(n.op == op for n in g.nodes))


def test_the_example_graphs_hold_every_op():
    assert {n.op for g in GRAPHS.values() for n in g.nodes} == set(OPS)


@pytest.mark.parametrize("op", OPS)
def test_emulator_executes_it(op):
    graph = _graph_of(op)
    node = next(n for n in graph.nodes if n.op == op)
    assert callable(REGISTRY[op].execute)
    out = emulate(graph, edge_inputs(graph, n=40), return_all=True)[node.name]
    assert out.shape == (40, *node.shape)
    assert node.type.contains(out)
    assert np.all(out >= node.lo) and np.all(out <= node.hi)  # the declared bounds hold


@pytest.mark.parametrize("op", OPS)
def test_hls4ml_export_lowers_it(op):
    assert op in ops.LOWERINGS, f"{op}: no hls4ml lowering; add backends/hls4ml/ops/{op}.py and a LOWERINGS line"
    module = ops.LOWERINGS[op]
    missing = [name for name in ops.INTERFACE if not hasattr(module, name)]
    assert not missing, f"backends/hls4ml/ops/{op}.py lacks {missing}"


@pytest.mark.parametrize("op", OPS)
def test_rtl_export_lowers_it(op):
    from edgebnn.backends.rtl import ops as rtl_ops

    assert op in rtl_ops.LOWERINGS, f"{op}: no RTL lowering; add backends/rtl/ops/{op}.py and a LOWERINGS line"
    module = rtl_ops.LOWERINGS[op]
    missing = [name for name in rtl_ops.INTERFACE if not hasattr(module, name)]
    assert not missing, f"backends/rtl/ops/{op}.py lacks {missing}"
    if module.FOLDED:
        assert callable(module.fold_sizes)


@pytest.mark.parametrize("name", OP_GRAPHS)
def test_rtl_export_writes_a_unit_per_node(tmp_path, name):
    from edgebnn.backends import rtl

    graph = GRAPHS[name]
    project = rtl.export(graph, tmp_path / "rtl")
    top = (project.hdl_dir / f"{project.top}.v").read_text()
    for node in graph.compute_nodes():
        name_v = project.meta["nodes"][node.name]
        assert f"module {name_v} (" in (project.hdl_dir / f"{name_v}.v").read_text()
        assert f"u_{name_v} (" in top


@pytest.mark.parametrize("op", OPS)
def test_hls4ml_cost_costs_or_refuses_it(op):
    handled = [table for table in (cost.COSTS, cost.FREE, cost.REFUSED) if op in table]
    assert len(handled) == 1, f"{op}: list it in exactly one of COSTS, FREE (with why) or REFUSED (with why)"
    if op in cost.COSTS:
        params = list(inspect.signature(cost.COSTS[op]).parameters)
        assert params == ["node", "src", "rf", "ctx", "widths", "warnings", "live"]
    else:
        reason = {**cost.FREE, **cost.REFUSED}[op]
        assert isinstance(reason, str) and reason and "\n" not in reason


@pytest.mark.parametrize("name", OP_GRAPHS)
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_estimate_gives_each_costed_node_a_row(io_type, name):
    graph = GRAPHS[name]
    est = estimate(graph, "pynq-z2", io_type=io_type)
    rows = {r.name: r.op for r in est.rows}
    for node in graph.compute_nodes():
        assert rows.get(node.name) == node.op or node.op in cost.FREE


@pytest.mark.csim
@pytest.mark.parametrize("name", OP_GRAPHS)
@pytest.mark.parametrize("io_type", ["io_parallel", "io_stream"])
def test_exported_graph_of_every_op_simulates_exactly(tmp_path, io_type, name):
    graph = GRAPHS[name]
    project = export_quietly(graph, tmp_path / "p", board=PYNQ, io_type=io_type)
    assert_csim_equals_emulator(project, graph, edge_inputs(graph, n=160))
